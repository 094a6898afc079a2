// cpp/src/core/json_reader.h — private to the library: reading a JSON document field by field, every
// problem collected with its field path ("inputs[0].dtype: expected a string, found number") so that
// all of them are reported at once. The manifest reader (manifest.cpp) adds the schema on top.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/core/manifest.h"
#include "core/common.h"

namespace etproof::detail {

using nlohmann::json;

inline const char* type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a float";
    default: return "an unexpected value";
  }
}

inline std::string squote(const std::string& s) { return "'" + s + "'"; }

inline bool is_safe_name(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

// A file name inside the bundle directory: one path component, never escaping it.
inline std::optional<std::string> file_name_problem(const std::string& s) {
  if (s.empty()) return "empty file name";
  if (s == "." || s == "..") return squote(s) + " escapes the bundle directory";
  if (s.find('/') != std::string::npos || s.find('\\') != std::string::npos)
    return squote(s) + " contains a path separator; files must lie directly in the bundle";
  if (s.find('\0') != std::string::npos) return "file name contains a NUL byte";
  return std::nullopt;
}

inline bool is_hex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Walks a document, collecting every problem with its field path.
class JsonReader {
 public:
  std::vector<std::string> problems;

  void problem(const std::string& path, const std::string& what) {
    problems.push_back(path + ": " + what);
  }

  static std::string at(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }
  static std::string at(const std::string& parent, size_t i) {
    return parent + "[" + std::to_string(i) + "]";
  }

  // The member `key` of `obj`, or nullptr (recording "missing" when required).
  const json* member(const json& obj, const std::string& parent, const char* key, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) problem(at(parent, key), "missing");
      return nullptr;
    }
    return &*it;
  }

  bool expect_type(const json& j, const std::string& path, bool ok, const char* want) {
    if (ok) return ok;
    // Appended, not a std::string("...") + const char* chain: GCC 12 warns on that chain once
    // inlined (-Warray-bounds, a false positive: GCC bug 105329).
    std::string what = "expected ";
    what += want;
    what += ", found ";
    what += type_name(j);
    problem(path, what);
    return ok;
  }

  std::optional<std::string> string_at(const json& obj, const std::string& parent, const char* key,
                                       bool required = true, bool non_empty = true) {
    const json* j = member(obj, parent, key, required);
    if (!j || !expect_type(*j, at(parent, key), j->is_string(), "a string")) return std::nullopt;
    auto s = j->get<std::string>();
    if (non_empty && s.empty()) {
      problem(at(parent, key), "empty string");
      return std::nullopt;
    }
    return s;
  }

  std::optional<int64_t> int_at(const json& obj, const std::string& parent, const char* key,
                                bool required = true, int64_t min = 0) {
    const json* j = member(obj, parent, key, required);
    if (!j) return std::nullopt;
    return int_value(*j, at(parent, key), min);
  }

  std::optional<int64_t> int_value(const json& j, const std::string& path, int64_t min) {
    if (!expect_type(j, path, j.is_number_integer(), "an integer")) return std::nullopt;
    if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) {
      problem(path, "integer out of range");
      return std::nullopt;
    }
    int64_t v = j.get<int64_t>();
    if (v < min) {
      problem(path, std::to_string(v) + " is below the minimum " + std::to_string(min));
      return std::nullopt;
    }
    return v;
  }

  std::optional<double> number_value(const json& j, const std::string& path) {
    if (!expect_type(j, path, j.is_number(), "a number")) return std::nullopt;
    return j.get<double>();
  }

  const json* object_at(const json& obj, const std::string& parent, const char* key, bool required = true) {
    const json* j = member(obj, parent, key, required);
    if (!j || !expect_type(*j, at(parent, key), j->is_object(), "an object")) return nullptr;
    return j;
  }

  const json* array_at(const json& obj, const std::string& parent, const char* key, bool required = true) {
    const json* j = member(obj, parent, key, required);
    if (!j || !expect_type(*j, at(parent, key), j->is_array(), "an array")) return nullptr;
    return j;
  }

  std::optional<std::string> file_at(const json& obj, const std::string& parent, const char* key) {
    auto s = string_at(obj, parent, key);
    if (!s) return std::nullopt;
    if (auto p = file_name_problem(*s)) {
      problem(at(parent, key), *p);
      return std::nullopt;
    }
    return s;
  }

  FileRef file_ref(const json& j, const std::string& path) {
    FileRef r;
    if (!expect_type(j, path, j.is_object(), "an object")) return r;
    r.file = file_at(j, path, "file").value_or("");
    r.bytes = uint64_t(int_at(j, path, "bytes").value_or(0));
    if (auto s = string_at(j, path, "sha256")) {
      if (is_hex64(*s))
        r.sha256 = *s;
      else
        problem(at(path, "sha256"), squote(*s) + " is not 64 lower-case hex digits");
    }
    return r;
  }
};

}  // namespace etproof::detail
