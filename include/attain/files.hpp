// Reading and writing the files attain takes from users and gives back: one place for the
// rules. A file read is a regular file under a size limit (a config pointed at /dev/zero or a
// FIFO must not grow memory without end); a file written appears whole or not at all (a temp
// file in the same directory, synced, renamed over the target; removed on every error).
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace attain {

// The size limits of the files attain reads.
inline constexpr std::uint64_t kMaxConfigBytes = std::uint64_t{16} << 20;  // configs, device files
inline constexpr std::uint64_t kMaxResultsBytes = std::uint64_t{512}
                                                  << 20;  // results, CSV, cluster

// Now in UTC, as every file attain writes records when it was made: "2026-12-06T01:30:00Z".
std::string now_iso();

// The whole of file `p`, a regular file of at most `limit` bytes. Throws InputError naming it
// as `what` (e.g. "results file") and the reason: missing, not a regular file, too large,
// unreadable.
std::string read_input_file(const std::filesystem::path& p, std::uint64_t limit,
                            std::string_view what);

// `text` parsed as JSON. Throws InputError "ORIGIN: not valid JSON (...)" for a syntax error, a
// truncation, or a number past double's range (1e999), which nlohmann reports as out_of_range.
nlohmann::json parse_json_input(std::string_view text, std::string_view origin);

// JSON value `v` as an integer in [lo, hi]. Throws InputError naming `what` for a value that is
// not an integer (a float such as 1e52 included: converting it would be undefined) or out of
// range.
std::int64_t json_integer(const nlohmann::json& v, std::int64_t lo, std::int64_t hi,
                          std::string_view what);
// The same over the whole range of an integer type T (capped at INT64_MAX).
template <class T>
T json_integer_as(const nlohmann::json& v, std::string_view what) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t hi = std::cmp_greater(std::numeric_limits<T>::max(), kMax)
                                  ? kMax
                                  : static_cast<std::int64_t>(std::numeric_limits<T>::max());
  return static_cast<T>(
      json_integer(v, static_cast<std::int64_t>(std::numeric_limits<T>::min()), hi, what));
}

// Whether a failed write's errno says the system refused the output (no room, a quota, a size
// limit, a failing device, a closed pipe): a run that could not finish, not bad input.
bool output_refused(int err);

// Writes `text` to `p` atomically: a temp file "<p>.tmp<pid>" beside it, fsync, rename over
// `p`. Creates the parent directories. Throws InputError naming `p` and the reason (a target
// that is a directory included); the temp file never stays behind.
void write_file_atomic(const std::filesystem::path& p, std::string_view text);

}  // namespace attain
