// Fields of the JSON files attain writes, read with errors that name the file and the field;
// numbers written so that a non-finite figure becomes null (JSON has no NaN or Inf).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "attain/files.hpp"
#include "attain/op.hpp"

namespace attain::json_io {

inline nlohmann::json num(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}
inline nlohmann::json num(const std::optional<double>& x) {
  return x ? num(*x) : nlohmann::json(nullptr);
}

// j[key] as T; `fallback` when it is absent or null, unless `required` (then InputError).
// A value of the wrong type, or an integer field holding a float or an out-of-range number:
// InputError naming `origin` and `key`.
template <class T>
T get(const nlohmann::json& j, const char* key, std::string_view origin, T fallback,
      bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw InputError(fmt::format("{}: missing field '{}'", origin, key));
    return fallback;
  }
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)  // 1e52 to int: undefined
    return json_integer_as<T>(*it, fmt::format("{}: field '{}'", origin, key));
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(
        fmt::format("{}: field '{}' has the wrong type ({})", origin, key, it->dump()));
  }
}

// A number that may be null (a figure not measured).
inline std::optional<double> get_optional(const nlohmann::json& j, const char* key,
                                          std::string_view origin) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return get<double>(j, key, origin, 0, true);
}

// j[key] as an object (InputError when it is missing or not one).
inline const nlohmann::json& object(const nlohmann::json& j, const char* key,
                                    std::string_view origin) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object())
    throw InputError(fmt::format("{}: missing object '{}'", origin, key));
  return *it;
}

// The document's "schema" is `expected`, or InputError saying which one this attain reads.
inline void check_schema(const nlohmann::json& j, const char* expected, std::string_view origin) {
  if (!j.is_object()) throw InputError(fmt::format("{}: not a JSON object", origin));
  const auto schema = get<std::string>(j, "schema", origin, "", true);
  if (schema != expected)
    throw InputError(fmt::format("{}: schema '{}' is not supported (this attain reads '{}')",
                                 origin, schema.substr(0, 80), expected));
}

}  // namespace attain::json_io
