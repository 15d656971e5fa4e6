#pragma once
// The entries of an artifact already parsed, found again by their raw bytes (entry header and stored
// payload). A diff parses OLD, then NEW with this index of OLD: a NEW entry equal byte for byte to one
// of OLD's has the same image, hashes and kernels, so it is copied instead of decoded and hashed again
// (a library upgrade keeps most of its modules; two copies of one build keep all of them).
#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kqual/artifact/artifact.hpp"

namespace kqual::artifact::detail {

class EntryReuse {
 public:
  // `file` holds the bytes `parsed` was parsed from; both must outlive this index.
  EntryReuse(const Artifact& parsed, std::span<const std::uint8_t> file);
  // The parsed entry whose header and stored bytes equal `raw` (compared in full), or null.
  const Entry* find(std::span<const std::uint8_t> raw) const;
  std::size_t size() const { return by_key_.size(); }

 private:
  static std::uint64_t key(std::span<const std::uint8_t> raw);
  std::unordered_multimap<std::uint64_t, std::pair<const Entry*, std::span<const std::uint8_t>>> by_key_;
};

// diff_artifacts (select.cpp); with `undecided`, every entry whose kernel (PTX: image) a comparison could not
// judge because it lies unhashed in a twin entry and the other side is not its twin is appended there (such a
// comparison counts as changed); without, those comparisons count as changed.
ArtifactDiff diff_artifacts(const Artifact& old_art, const Artifact& new_art, const Arch& target,
                            std::vector<const Entry*>* undecided);

}  // namespace kqual::artifact::detail
