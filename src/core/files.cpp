#include "attain/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <system_error>

#include "attain/op.hpp"

namespace attain {

namespace {
std::string errno_text(int e) {
  return std::error_code(e, std::generic_category()).message();
}
std::string size_text(std::uint64_t bytes) {
  return bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} bytes", bytes);
}

// Closes a descriptor when the scope ends.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string read_input_file(const std::filesystem::path& p, std::uint64_t limit,
                            std::string_view what) {
  const std::string name = p.string();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check below refuses it.
  Fd f{::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0)
    throw InputError(fmt::format("cannot read {} '{}': {}", what, name, errno_text(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw InputError(fmt::format("cannot read {} '{}': {}", what, name, errno_text(errno)));
  if (!S_ISREG(st.st_mode))
    throw InputError(fmt::format("{} '{}' is not a regular file", what, name));
  if (static_cast<std::uint64_t>(st.st_size) > limit)
    throw InputError(fmt::format("{} '{}' is {}, over the limit of {}", what, name,
                                 size_text(static_cast<std::uint64_t>(st.st_size)),
                                 size_text(limit)));
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw InputError(fmt::format("cannot read {} '{}': {}", what, name, errno_text(errno)));
    if (n == 0) break;  // shrank while read: what is there
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

nlohmann::json parse_json_input(std::string_view text, std::string_view origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw InputError(fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
}

std::int64_t json_integer(const nlohmann::json& v, std::int64_t lo, std::int64_t hi,
                          std::string_view what) {
  if (!v.is_number_integer())
    throw InputError(fmt::format("{} is not an integer ({})", what, excerpt(v.dump())));
  auto out_of_range = [&] {
    return InputError(fmt::format("{} = {} is outside {}..{}", what, excerpt(v.dump()), lo, hi));
  };
  if (v.is_number_unsigned()) {  // past INT64_MAX possibly: compare unsigned
    const auto u = v.get<std::uint64_t>();
    if ((hi < 0 || u > static_cast<std::uint64_t>(hi)) ||
        (lo > 0 && u < static_cast<std::uint64_t>(lo)))
      throw out_of_range();
    return static_cast<std::int64_t>(u);
  }
  const auto x = v.get<std::int64_t>();
  if (x < lo || x > hi) throw out_of_range();
  return x;
}

bool output_refused(int err) {
  return err == ENOSPC || err == EDQUOT || err == EFBIG || err == EIO || err == EPIPE;
}

void write_file_atomic(const std::filesystem::path& p, std::string_view text) {
  const std::string name = p.string();
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec))
    throw InputError(fmt::format("cannot write '{}': it is a directory", name));
  if (p.has_parent_path()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) throw InputError(fmt::format("cannot write '{}': {}", name, ec.message()));
  }
  const std::string tmp = name + fmt::format(".tmp{}", static_cast<long>(::getpid()));
  auto fail = [&](int e) {
    ::unlink(tmp.c_str());
    const std::string what = fmt::format("cannot write '{}': {}", name, errno_text(e));
    if (output_refused(e)) throw RuntimeFailure(what);  // the path was fine, the run was not
    throw InputError(what);
  };
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0) throw InputError(fmt::format("cannot write '{}': {}", name, errno_text(errno)));
    std::size_t put = 0;
    while (put < text.size()) {
      const ssize_t n = ::write(f.fd, text.data() + put, text.size() - put);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(errno);
      put += static_cast<std::size_t>(n);
    }
    if (::fsync(f.fd) != 0) fail(errno);
  }
  if (::rename(tmp.c_str(), name.c_str()) != 0) fail(errno);
}

}  // namespace attain
