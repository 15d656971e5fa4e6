// Profile shapes matched to timed shapes by value (pipeline/qualify.hpp, contract_shape_mix): the
// profile's text parsed against the contract, keyed by the completed dims the timed shapes carry.
#include <gtest/gtest.h>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/decision/speed.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {

decision::ShapeSamples timed(const std::string& shape, double base_ms, double ratio) {
  decision::ShapeSamples s;
  s.shape = shape;
  s.baseline = "plain";
  for (int i = 0; i < 30; ++i) {
    s.baseline_ms.push_back(base_ms * (1 + 0.001 * (i % 5)));
    s.candidate_ms.push_back(ratio * base_ms * (1 + 0.001 * ((i + 2) % 5)));
  }
  return s;
}

// rotary completes its dims with the derived axis half = d / 2: a profile naming tokens, heads and d
// must weigh the timed "d=128,half=64,heads=32,tokens=4096" (it was "in the profile, not timed").
TEST(ShapeMix, AProfileShapeMatchesTheTimedShapeWithDerivedAxes) {
  const contract::Contract& rotary = contract::ContractLookup().resolve("rotary", test::repo_root());
  decision::DeploymentProfile p;
  p.name = "rot";
  p.shape_calls = {{"tokens=4096,heads=32,d=128", 1000}, {"tokens=16384,heads=32,d=128", 10}};
  const decision::ShapeMix mix = contract_shape_mix(rotary, p);
  ASSERT_EQ(mix.calls.size(), 2u);
  EXPECT_EQ(mix.calls[0].first, contract::format_dims(contract::parse_shape(rotary, "tokens=4096,heads=32,d=128")));
  EXPECT_NE(mix.calls[0].first.find("half=64"), std::string::npos) << mix.calls[0].first;
  const std::vector<decision::ShapeSamples> shapes = {timed(mix.calls[0].first, 0.02, 0.8), timed(mix.calls[1].first, 0.08, 0.8)};
  const decision::SpeedJudgement j = decision::judge_speed(shapes, mix, {});
  EXPECT_EQ(j.verdict, "ship") << j.deciding;
  EXPECT_GT(j.shapes[0].weight, 0.9);
}

// One shape in two spellings ("n=4096" and "4096") is an input error: the second silently replaced
// the first's calls.
TEST(ShapeMix, OneShapeInTwoSpellingsIsAnInputError) {
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  decision::DeploymentProfile p;
  p.name = "dup";
  p.shape_calls = {{"n=4096", 1e6}, {"4096", 1}, {"n=1048576", 1}};
  try {
    contract_shape_mix(c, p);
    FAIL() << "accepted one shape twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("'n=4096' and '4096'"), std::string::npos) << e.what();
  }
  p.shape_calls = {{"4096", 1e6}, {"n=1048576", 1}};
  const decision::ShapeMix ok = contract_shape_mix(c, p);
  EXPECT_EQ(ok.calls[0].first, "n=4096");
}

}  // namespace
}  // namespace kqual::pipeline
