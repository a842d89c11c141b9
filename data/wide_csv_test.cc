#include "data/wide_csv.h"

#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

TEST(WideCsvTest, ParsesHeaderlessRows) {
  auto m = ParseWideCsv("1,2,3\n4,5,6\n", "x.csv", {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 2);
  EXPECT_EQ(m->columns, 3);
  EXPECT_TRUE(m->column_names.empty());
  EXPECT_FLOAT_EQ(m->at(1, 2), 6.0f);
  EXPECT_FLOAT_EQ(m->at(0, 1), 2.0f);
}

TEST(WideCsvTest, DetectsHeaderAndCrlf) {
  auto m = ParseWideCsv("a, b\r\n1.5,2\r\n-3e1,4\r\n", "x.csv", {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 2);
  EXPECT_THAT(m->column_names, ::testing::ElementsAre("a", "b"));
  EXPECT_FLOAT_EQ(m->at(1, 0), -30.0f);
}

// An empty header cell is named by its column; two columns of one name are
// refused, naming both, since the page and an exported model name stations.
TEST(WideCsvTest, HeaderNamesAreFilledInOrRefusedWhenRepeated) {
  auto m = ParseWideCsv("time,a,,b\n2020-01-01T00:00,1,2,3\n2020-01-01T01:00,4,5,6\n", "x.csv", {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->column_names, ::testing::ElementsAre("a", "column 3", "b"));
  auto repeated = ParseWideCsv("time,a,b, a\n2020-01-01T00:00,1,2,3\n", "x.csv", {});
  ASSERT_FALSE(repeated.ok());
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(repeated.status().message(),
              HasSubstr("x.csv:1: columns 2 and 4 are both named 'a'; each station needs a name "
                        "of its own: rename one in the header"));
}

TEST(WideCsvTest, ForcedAbsentHeaderReportsTheCell) {
  WideCsvOptions options;
  options.header = CsvHeader::kAbsent;
  auto m = ParseWideCsv("a,b\n1,2\n", "x.csv", options);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("x.csv:1:1: 'a' is neither a number nor a time"));
}

TEST(WideCsvTest, WrongColumnCountNamesLine) {
  auto m = ParseWideCsv("1,2,3\n4,5,6\n7,8\n", "winds.dat", {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(),
            "winds.dat:3: expected 3 columns, got 2");
}

TEST(WideCsvTest, MissingCellNamesLineAndColumn) {
  auto m = ParseWideCsv("h1,h2\n1,2\n3,\n", "w.csv", {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("w.csv:3:2: missing value (data.missing:"));
}

// data.missing: an empty cell is refused naming the option, interpolated
// along its station (held at the ends), or its row dropped.
TEST(WideCsvTest, EmptyCellsAreRefusedInterpolatedOrDropped) {
  const std::string text = "a,b\n,10\n2,\n4,30\n6,40\n8,\n";
  auto refused = ParseWideCsv(text, "t.csv", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("t.csv:2:1: missing value (data.missing: "
                                                    "interpolate or drop_rows"));
  WideCsvGaps gaps;
  WideCsvOptions o;
  o.missing = MissingCells::kInterpolate;
  o.gaps = &gaps;
  auto filled = ParseWideCsv(text, "t.csv", o);
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_EQ(filled->rows, 5);
  EXPECT_EQ(filled->values, (std::vector<float>{2, 10, 2, 20, 4, 30, 6, 40, 8, 40}));
  EXPECT_EQ(gaps.filled, 3);
  o.missing = MissingCells::kDropRows;
  auto dropped = ParseWideCsv(text, "t.csv", o);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(dropped->rows, 2);
  EXPECT_EQ(dropped->values, (std::vector<float>{4, 30, 6, 40}));
  EXPECT_EQ(gaps.dropped, 3);
  o.missing = MissingCells::kInterpolate;
  EXPECT_THAT(ParseWideCsv("a,b\n1,\n2,\n", "t.csv", o).status().message(),
              HasSubstr("t.csv: column 2 has no value at all"));
}

// An infinity is no value; NaN marks a missing one.
TEST(WideCsvTest, NonFiniteCellIsRejected) {
  auto m = ParseWideCsv("1,2\n3,inf\n", "w.csv", {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("w.csv:2:2: 'inf' is not a number"));
  auto nan = ParseWideCsv("1,2\n3,nan\n", "w.csv", {});
  ASSERT_FALSE(nan.ok());
  EXPECT_THAT(nan.status().message(), HasSubstr("w.csv:2:2: missing value ('nan')"));
}

TEST(WideCsvTest, AMissingFileIsAFailedPrecondition) {
  auto m = LoadWideCsv("/nonexistent/dir/file.csv", {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(m.status().message(), HasSubstr("/nonexistent/dir/file.csv"));
}

TEST(WideCsvTest, LoadsFileFromDisk) {
  const std::string path = ::testing::TempDir() + "/wide_csv_test.csv";
  {
    std::ofstream out(path);
    out << "0.5,1.5\n2.5,3.5\n4.5,5.5";  // no final newline
  }
  auto m = LoadWideCsv(path, {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 3);
  EXPECT_FLOAT_EQ(m->at(2, 1), 5.5f);
  std::remove(path.c_str());
}

// As a spreadsheet saves "CSV UTF-8": a byte-order mark before a first
// row of values, which must not turn it into a header.
TEST(WideCsvTest, AByteOrderMarkIsDroppedAndUtf16IsRefused) {
  const std::string path = ::testing::TempDir() + "/wide_csv_bom.csv";
  {
    std::ofstream out(path);
    out << "\xEF\xBB\xBF"
        << "0.5,1.5\r\n2.5,3.5\r\n";
  }
  auto m = LoadWideCsv(path, {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 2);
  EXPECT_TRUE(m->column_names.empty());
  EXPECT_FLOAT_EQ(m->at(0, 0), 0.5f);
  {
    std::ofstream out(path);
    out << std::string(
        "\xFF\xFE"
        "0\0,\0"
        "1\0",
        8);
  }
  m = LoadWideCsv(path, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(),
              HasSubstr("the file is UTF-16 text: save it as UTF-8 (a spreadsheet's \"CSV "
                        "UTF-8\"), or convert it with iconv -f UTF-16 -t UTF-8"));
  std::remove(path.c_str());
}

TEST(WideCsvTest, SemicolonsOrTabsAreNamedWithTheFix) {
  auto semi = ParseWideCsv("a;b\n1,5;2,5\n", "s.csv", {});
  ASSERT_FALSE(semi.ok());
  EXPECT_EQ(semi.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(semi.status().message(),
            "s.csv:1: the cells are separated by semicolons; the file must be comma-separated, "
            "with '.' as the decimal mark: save it as CSV with those, or convert it (tr ';' "
            "',' < in > out.csv, where no cell holds a comma)");
  auto tabs = ParseWideCsv("1.5\t2.5\n3\t4\n", "t.tsv", {});
  ASSERT_FALSE(tabs.ok());
  EXPECT_THAT(tabs.status().message(),
              HasSubstr("t.tsv:1: the cells are separated by tabs; the file must be "
                        "comma-separated"));
  EXPECT_THAT(tabs.status().message(), HasSubstr("(tr '\\t' ',' < in > out.csv"));
  // Values with decimal commas and no header: found on the first cell that
  // holds a semicolon.
  auto decimal = ParseWideCsv("5,0963;2,0564;1\n1,5;2,5;3\n", "d.csv", {});
  ASSERT_FALSE(decimal.ok());
  EXPECT_THAT(decimal.status().message(),
              HasSubstr("d.csv:2: the cells are separated by semicolons"));
  // A semicolon inside a header's unit, beside its commas, is read as text.
  auto unit = ParseWideCsv("day,rain (mm; daily)\n1,2.5\n2,0\n", "u.csv", {});
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_THAT(unit->column_names, ::testing::ElementsAre("day", "rain (mm; daily)"));
}

TEST(WideCsvTest, QuotedCellsAreReadWithoutTheirQuotes) {
  auto m = ParseWideCsv(
      "\"when\",\"north\", \"south\"\n\"2024-01-01\",\"1.5\",2\n"
      "2024-01-02,3,\" 4 \"\n",
      "q.csv", {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->time_name, "when");
  EXPECT_THAT(m->column_names, ::testing::ElementsAre("north", "south"));
  EXPECT_EQ(m->times.size(), 2u);
  EXPECT_FLOAT_EQ(m->at(0, 0), 1.5f);
  EXPECT_FLOAT_EQ(m->at(1, 1), 4.0f);
}

// RFC 4180: a quoted cell may hold commas and doubled quotes; a quote the
// line leaves open is refused (a cell over several lines is not read).
TEST(WideCsvTest, AQuotedCellMayHoldCommasAndQuotes) {
  auto m = ParseWideCsv(
      "datetime,\"flow, m3/s\",\"gauge \"\"B\"\"\"\n2024-01-01,1.5,2\n2024-01-02,3,4\n", "q.csv",
      {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->column_names, ::testing::ElementsAre("flow, m3/s", "gauge \"B\""));
  EXPECT_FLOAT_EQ(m->at(1, 1), 4.0f);
  auto open = ParseWideCsv("datetime,a,b\n2024-01-01,\"1.5,2\n2024-01-02,3,4\n", "o.csv", {});
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().message(),
            "o.csv:2: a double quote opens a cell that the line does not close: close it, or "
            "take the line break out of the cell (a cell over several lines is not read)");
}

// NA, NaN, null and the like are missing values, read as an empty cell.
TEST(WideCsvTest, MissingMarkersAreEmptyCells) {
  const std::string text = "t,a,b\n2024-01-01,1,2\n2024-01-02,NA,4\n2024-01-03,3,nan\n";
  auto refused = ParseWideCsv(text, "n.csv", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("n.csv:3:2: missing value ('NA') (data.missing: interpolate or "
                        "drop_rows accepts gaps"));
  WideCsvOptions interpolate;
  interpolate.missing = MissingCells::kInterpolate;
  auto m = ParseWideCsv(text, "n.csv", interpolate);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FLOAT_EQ(m->at(1, 0), 2.0f);  // between 1 and 3
  EXPECT_FLOAT_EQ(m->at(2, 1), 4.0f);  // held at the last value
  // Other words are still no number.
  auto bad = ParseWideCsv("t,a\n2024-01-01,1\n2024-01-02,n.a.\n", "b.csv", interpolate);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("b.csv:3:2: 'n.a.' is not a number"));
}

// A comma closing every line adds no column; one closing only the header
// (or a row) is named in the error with the fix.
TEST(WideCsvTest, ACommaClosingEveryLineIsDropped) {
  auto m = ParseWideCsv("t,a,b,\r\n2024-01-01,1,2,\r\n2024-01-02,3,4,\r\n", "c.csv", {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->columns, 2);
  EXPECT_THAT(m->column_names, ::testing::ElementsAre("a", "b"));
  auto header = ParseWideCsv("t,a,b,\n2024-01-01,1,2\n", "h.csv", {});
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().message(),
            "h.csv:2: expected 4 columns, got 3: the header ends with a comma; remove it");
  auto row = ParseWideCsv("t,a,b\n2024-01-01,1,2,\n", "r.csv", {});
  ASSERT_FALSE(row.ok());
  EXPECT_EQ(row.status().message(),
            "r.csv:2: expected 3 columns, got 4: the line ends with a comma; remove it");
}

// A long bad cell is quoted to 40 characters, not whole.
TEST(WideCsvTest, AMessageQuotesAtMost40CharactersOfACell) {
  const std::string long_cell(300, 'x');
  auto m = ParseWideCsv("1,2\n3," + long_cell + "\n", "l.csv", {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("l.csv:2:2: '" + std::string(40, 'x') + "...' is not a number"));
  EXPECT_EQ(m.status().message().find(std::string(41, 'x')), std::string::npos);
}

TEST(WideCsvTest, ALongParsePastItsDeadlineStops) {
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "1,2,3\n";
  WideCsvOptions options;
  EXPECT_TRUE(ParseWideCsv(text, "big.csv", options).ok());
  options.limits.deadline = absl::Now() - absl::Seconds(1);
  auto parsed = ParseWideCsv(text, "big.csv", options);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(parsed.status().message().find("big.csv"), absl::string_view::npos);
}

// The commonest layout a scientist's CSV has: a first column of times.
TEST(WideCsvTest, AFirstColumnOfTimesIsReadAsTheRowsTimes) {
  const std::string text =
      "datetime,g1,g2\n2023-01-01 00:00,1,2\n2023-01-01 01:00,3,4\n2023-01-01 02:00,5,6\n";
  auto m = ParseWideCsv(text, "q.csv", {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->columns, 2);
  EXPECT_EQ(m->rows, 3);
  EXPECT_THAT(m->column_names, ::testing::ElementsAre("g1", "g2"));
  EXPECT_EQ(m->time_name, "datetime");
  EXPECT_THAT(m->times, ::testing::ElementsAre(1672531200, 1672534800, 1672538400));
  EXPECT_FLOAT_EQ(m->at(2, 1), 6.0f);
  // Without a header too: times and numbers are values, not names.
  auto bare = ParseWideCsv("2023-01-01,1\n2023-01-02,2\n", "b.csv", {});
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->columns, 1);
  EXPECT_EQ(bare->times.size(), 2u);
  // "none" keeps the old reading: the column is refused as a value.
  WideCsvOptions none;
  none.time_column = "none";
  auto refused = ParseWideCsv(text, "q.csv", none);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("q.csv:2:1: '2023-01-01 00:00' is a time, in a column of values"));
}

TEST(WideCsvTest, ANamedTimeColumnMayStandAnywhere) {
  WideCsvOptions named;
  named.time_column = "when";
  auto m = ParseWideCsv("a,when,b\n1,2023-03-01T00:00Z,2\n3,2023-03-01T00:30Z,4\n", "n.csv",
                        named);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->column_names, ::testing::ElementsAre("a", "b"));
  EXPECT_EQ(m->times[1] - m->times[0], 1800);
  EXPECT_FLOAT_EQ(m->at(1, 1), 4.0f);
  named.time_column = "date";
  auto missing = ParseWideCsv("a,when\n1,2023-03-01\n", "n.csv", named);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("time_column 'date' is not a column of the header (a, when)"));
}

TEST(WideCsvTest, BadTimesAndOtherTextNameTheLineAndTheFix) {
  auto late = ParseWideCsv("t,a\n2023-01-02,1\n2023-01-01,2\n", "s.csv", {});
  ASSERT_FALSE(late.ok());
  EXPECT_THAT(late.status().message(),
              HasSubstr("s.csv:3:1: time '2023-01-01' is not after the row before's "
                        "(2023-01-02 00:00): sort the file by time"));
  auto broken = ParseWideCsv("t,a\n2023-01-01,1\nyesterday,2\n", "s.csv", {});
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(),
              HasSubstr("s.csv:3:1: 'yesterday' in the time column is not a time"));
  auto site = ParseWideCsv("site,a\nPullman,1\n", "s.csv", {});
  ASSERT_FALSE(site.ok());
  EXPECT_EQ(site.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(site.status().message(),
              HasSubstr("s.csv:2:1: 'Pullman' is neither a number nor a time"));
  EXPECT_THAT(site.status().message(), HasSubstr("remove the column"));
  // Further down a column of numbers, the fix is the cell's.
  auto typo = ParseWideCsv("a,b\n1,2\n3,x\n", "s.csv", {});
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.status().message(),
              HasSubstr("s.csv:3:2: 'x' is not a number: correct the cell, or empty it"));
  auto only = ParseWideCsv("t\n2023-01-01\n", "s.csv", {});
  ASSERT_FALSE(only.ok());
  EXPECT_THAT(only.status().message(), HasSubstr("the only column is the time column"));
}

TEST(WideCsvTest, ADroppedRowTakesItsTimeWithIt) {
  WideCsvOptions drop;
  drop.missing = MissingCells::kDropRows;
  auto m = ParseWideCsv("t,a\n2023-01-01,1\n2023-01-02,\n2023-01-03,3\n", "d.csv", drop);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->rows, 2);
  EXPECT_EQ(m->times[1] - m->times[0], 2 * 86400);
}

}  // namespace
}  // namespace hpt
