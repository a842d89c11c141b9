#!/usr/bin/python3
"""Writes a synthetic river-gauge CSV, the kind of file a hydrologist brings:
a `datetime` column of hourly UTC times, then one column of discharge
(m3/s) per gauge along one river. Rain events raise the flow at the
headwater gauge and reach each gauge further down a few hours later, then
recede exponentially; each gauge adds its base flow, a daily cycle and
noise. A gauge's next hour is thus partly foretold by the gauges upstream,
which persistence (its own last value) cannot see.

  python3 examples/make_river_csv.py --out /tmp/river/river.csv
"""
import argparse
import datetime
import math
import os
import random


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the CSV to write")
    parser.add_argument("--rows", type=int, default=3000, help="hours (rows)")
    parser.add_argument("--gauges", type=int, default=10, help="gauges (columns)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lag_h", type=int, default=3, help="hours between gauges")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    # Rain events: about one every four days, of random size.
    events = [(t, rng.uniform(20, 120)) for t in range(args.rows) if rng.random() < 1 / 96]
    recession_h = 18.0
    start = datetime.datetime(2023, 1, 1, tzinfo=datetime.timezone.utc)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("datetime," + ",".join(f"gauge_{g + 1:02d}" for g in range(args.gauges)) + "\n")
        for r in range(args.rows):
            cells = []
            for g in range(args.gauges):
                flow = 40 + 12 * g  # base flow grows downstream
                for t, size in events:
                    arrive = t + g * args.lag_h
                    if r >= arrive:
                        flow += size * (1 + 0.1 * g) * math.exp(-(r - arrive) / recession_h)
                flow += 2 * math.sin(2 * math.pi * (r % 24) / 24) + rng.gauss(0, 1.0)
                cells.append(f"{max(flow, 0.0):.2f}")
            time = (start + datetime.timedelta(hours=r)).strftime("%Y-%m-%d %H:%M")
            f.write(time + "," + ",".join(cells) + "\n")
    print(f"wrote {args.out}: {args.rows} hours x {args.gauges} gauges")


if __name__ == "__main__":
    main()
