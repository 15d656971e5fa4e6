// The prepared-case cache under lanes (selftest and screen check several candidates at once): two
// threads that meet the same case at the same moment get one preparation, not two (CPU only: the
// softmax reference runs on the host; no worker starts).
#include <gtest/gtest.h>

#include <latch>
#include <random>
#include <thread>

#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::check {
namespace {

TEST(CaseCache, LanesThatMeetOneCaseAtOnceShareOnePreparation) {
  worker::SessionOptions so;
  so.use_gpu = false;
  worker::Session s(so);
  const contract::Contract& c = contract::find_contract("softmax");
  contract::CaseSpec spec;
  spec.family = "normal";
  spec.dtype = DType::f32;
  spec.dims = {{"rows", 2048}, {"cols", 1031}};  // ~2 M elements: the reference takes long enough for both to miss
  spec.seed = std::random_device{}();            // a case no other test in this process prepared
  spec.id = "f32/rows=2048,cols=1031/normal/lanes";
  std::shared_ptr<const PreparedCase> got[2];
  std::latch start(2);
  {
    std::jthread a([&] {
      start.arrive_and_wait();
      got[0] = prepare_case(s, c, spec);
    });
    std::jthread b([&] {
      start.arrive_and_wait();
      got[1] = prepare_case(s, c, spec);
    });
  }
  ASSERT_TRUE(got[0] && got[1]);
  EXPECT_EQ(got[0].get(), got[1].get()) << "both lanes prepared the case (the reference ran twice)";
  EXPECT_EQ(got[0]->reference, "cpu");
  // Later lanes find it too.
  EXPECT_EQ(prepare_case(s, c, spec).get(), got[0].get());
}

}  // namespace
}  // namespace kqual::check
