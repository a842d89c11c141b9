#include "common/task_queue.h"

#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(TaskQueueTest, RunsTasksInOrderOnOneThread) {
  std::vector<int> order;
  std::thread::id first_thread;
  bool same_thread = true;
  {
    TaskQueue queue("test");
    for (int i = 0; i < 100; ++i) {
      queue.Post([&, i] {
        if (i == 0) first_thread = std::this_thread::get_id();
        same_thread &= std::this_thread::get_id() == first_thread;
        order.push_back(i);
      });
    }
  }  // the destructor drains the queue
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_TRUE(same_thread);
  EXPECT_NE(first_thread, std::this_thread::get_id());
}

}  // namespace
}  // namespace hpt
