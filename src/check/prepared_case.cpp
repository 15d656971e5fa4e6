// Prepared cases: a case's inputs and expected outputs, generated once per process and shared by
// every implementation checked on it (selftest, qualify and screen check many implementations on the
// same cases), in a cache bounded in bytes. Lanes that meet one case at once wait for the first
// preparation instead of computing the reference again.
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "kqual/check/evaluate.hpp"
#include "kqual/contract/compare.hpp"
#include "internal.hpp"

namespace kqual::check {

namespace {

// Inputs and expected outputs of recent cases, shared by every implementation checked in this
// process (selftest and qualify check many implementations on the same cases: generating the data
// and the reference once saves most of the CPU time). Bounded in bytes, oldest evicted first.
class CaseCache {
 public:
  std::shared_ptr<const PreparedCase> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second;
  }
  void put(const std::string& key, std::shared_ptr<const PreparedCase> v, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes > limit() || map_.count(key)) return;  // another thread prepared the same case first
    while (!order_.empty() && used_ + bytes > limit()) {
      auto& [k, b] = order_.front();
      map_.erase(k);
      used_ -= b;
      order_.pop_front();
    }
    map_[key] = std::move(v);
    order_.emplace_back(key, bytes);
    used_ += bytes;
  }
  // Held while one case is prepared: lanes checking at once (selftest, screen) that meet the same
  // case wait for the first one's reference instead of computing it again. Striped by key.
  std::mutex& preparing(const std::string& key) { return stripes_[std::hash<std::string>{}(key) % stripes_.size()]; }

 private:
  static std::size_t limit() {
    static const std::size_t l = [] {
      if (const char* e = std::getenv("KQUAL_CASE_CACHE_MB")) return std::size_t(std::strtoull(e, nullptr, 10)) << 20;
      // A quarter of physical memory, at most 8 GiB.
      long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      std::size_t phys = pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) : 0;
      return std::min<std::size_t>(phys / 4, std::size_t(8) << 30);
    }();
    return l;
  }
  std::array<std::mutex, 64> stripes_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const PreparedCase>> map_;
  std::deque<std::pair<std::string, std::size_t>> order_;
  std::size_t used_ = 0;
};

CaseCache& case_cache() {
  static CaseCache c;
  return c;
}

}  // namespace

std::shared_ptr<const PreparedCase> prepare_case(Session& s, const contract::Contract& c, const contract::CaseSpec& spec) {
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}", c.name(), spec.id, to_string(spec.dtype), contract::format_dims(spec.dims),
                                spec.family, spec.seed);
  if (auto hit = case_cache().find(key)) return hit;
  std::lock_guard<std::mutex> preparing(case_cache().preparing(key));
  if (auto hit = case_cache().find(key)) return hit;  // prepared by another lane while this one waited
  auto p = std::make_shared<PreparedCase>();
  p->data = c.make_case_in(spec, reference_host(s));  // a [generator] runs in the run's reference process
  p->expected = compute_reference(s, c, p->data, &p->reference);
  std::vector<std::string> why;
  for (const auto& t : p->expected) {
    std::string d = contract::degenerate_reason(t);
    if (d.empty()) {
      why.clear();
      break;
    }
    why.push_back(d);
  }
  if (!why.empty()) p->degenerate = fmt::format("{}", fmt::join(why, "; "));
  std::size_t bytes = 0;
  for (const auto& t : p->data.inputs) bytes += t.bytes.size();
  for (const auto& t : p->expected) bytes += t.bytes.size() + 8 * (t.ref.size() + t.bound.size() + t.alt.size());
  case_cache().put(key, p, bytes);
  return p;
}

}  // namespace kqual::check
