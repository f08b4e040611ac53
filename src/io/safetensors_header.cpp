// The safetensors header, read as a stream of SAX events: each top-level value (one tensor's
// entry, or __metadata__) is built as a small JSON value, checked and dropped as soon as it
// ends. json::parse with a callback (to catch repeated keys, which nlohmann merges silently)
// took O(n²) time in the number of tensors: its parser scans the whole parent object at the end
// of every nested one, looking for values the callback discarded (20k tensors 6.5 s, 40k 21 s,
// 300k still running after 90 s). Building the whole header's DOM without it is linear but slow
// to build and to free (300k tensors 1.3 s); one entry at a time, allocations stay few (0.45 s).
#include "io/safetensors_header.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "attn/error.hpp"

namespace attn::io {

namespace {

using json = nlohmann::json;

// Where the header starts in the file: positions in messages count from the file's start.
constexpr size_t header_start = 8;

constexpr uint64_t max_elements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// Every dtype name the format defines, so an unsupported one is told apart from a typo.
constexpr std::array<std::string_view, 19> known_dtypes = {
    "BOOL", "U8",  "I8",  "I16",     "U16",     "F16",     "BF16",    "I32",     "U32", "F32",
    "F64",  "I64", "U64", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4"};

// nlohmann's message without its "[json.exception.parse_error.101] " prefix, which means
// nothing to users.
std::string_view without_json_prefix(const std::exception& e) {
  std::string_view why = e.what();
  if (size_t bracket = why.find("] "); why.starts_with("[json.") && bracket != why.npos)
    why.remove_prefix(bracket + 2);
  return why;
}

// Text from the file as it appears in a message: long junk is cut so the message stays short.
std::string shown(std::string_view text) {
  constexpr size_t limit = 40;
  return text.size() <= limit ? std::string(text) : std::string(text.substr(0, limit)) + "…";
}

tensor_entry check_entry(const std::string& name, const json& info, const std::string& source) {
  const std::string where = tensor_where(name);
  if (!info.is_object())
    throw_input(source, "entry must be an object with dtype, shape and data_offsets", where);
  tensor_entry e;

  const auto dtype_it = info.find("dtype");
  if (dtype_it == info.end() || !dtype_it->is_string())
    throw_input(source, "missing or non-string 'dtype'", where);
  const auto& dtype = dtype_it->get_ref<const std::string&>();
  uint64_t item_size = 0;
  if (dtype == "F32") {
    e.dtype = stored_dtype::f32;
    item_size = 4;
  } else if (dtype == "F16") {
    e.dtype = stored_dtype::f16;
    item_size = 2;
  } else if (dtype == "BF16") {
    e.dtype = stored_dtype::bf16;
    item_size = 2;
  } else if (std::find(known_dtypes.begin(), known_dtypes.end(), dtype) != known_dtypes.end()) {
    throw_input(source, fmt::format("dtype {} not supported, expected F32, F16 or BF16", dtype),
                where);
  } else {
    throw_input(source, fmt::format("unknown dtype '{}'", dtype), where);
  }

  const auto shape_it = info.find("shape");
  if (shape_it == info.end() || !shape_it->is_array())
    throw_input(source, "missing 'shape' (an array of non-negative integers)", where);
  // A checked product, kept within int64 at every step like shape_numel() (which the tensor
  // constructor calls), so no shape that passes here can make it throw later. nlohmann stores
  // non-negative integer literals as unsigned, negative ones as signed.
  // `reach` skips zero dimensions: [0, 2^32, 2^32] holds nothing, but the tensor's strides
  // would still overflow.
  e.count = 1;
  uint64_t reach = 1;
  for (const json& d : *shape_it) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > max_elements)
      throw_input(source,
                  fmt::format("'shape' must be an array of non-negative integers, got {}",
                              shape_it->dump()),
                  where);
    const uint64_t n = d.get<uint64_t>();
    if (n != 0 && reach > max_elements / n)
      throw_input(source, fmt::format("shape {} has too many elements", shape_it->dump()), where);
    if (n != 0) reach *= n;
    e.count *= n;  // count is reach or 0, so this fits too
    e.shape.push_back(static_cast<int64_t>(n));
  }
  if (e.count > std::numeric_limits<uint64_t>::max() / item_size)
    throw_input(source, fmt::format("shape {} has too many elements", shape_it->dump()), where);

  const auto offsets_it = info.find("data_offsets");
  if (offsets_it == info.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned())
    throw_input(source, "'data_offsets' must be [begin, end] with non-negative integers", where);
  e.begin = (*offsets_it)[0].get<uint64_t>();
  e.end = (*offsets_it)[1].get<uint64_t>();
  if (e.begin > e.end)
    throw_input(source, fmt::format("data_offsets begin {} is after end {}", e.begin, e.end),
                where);
  const uint64_t need = e.count * item_size;
  if (need != e.end - e.begin)
    throw_input(source,
                fmt::format("shape {} of dtype {} needs {} bytes but data_offsets [{}, {}] hold {}",
                            shape_it->dump(), dtype, need, e.begin, e.end, e.end - e.begin),
                where);
  return e;
}

void read_metadata(const json& info, std::map<std::string, std::string>& metadata,
                   const std::string& source) {
  if (!info.is_object())
    throw_input(source, "'__metadata__' must be an object of strings", "__metadata__");
  for (const auto& [key, value] : info.items()) {
    if (!value.is_string())
      throw_input(
          source,
          fmt::format("'__metadata__' values must be strings; '{}' is {}", key, value.type_name()),
          "__metadata__");
    metadata.emplace(key, value.get<std::string>());
  }
}

// Builds one JSON value from SAX events, as json::parse would. Iterative, so deep nesting
// cannot overflow the stack.
class value_builder {
 public:
  // The next event starts a new value, built in `target`.
  void start(json& target) {
    target_ = &target;
    open_.clear();
  }
  // Whether an object or array of the value is still open.
  bool building() const { return !open_.empty(); }

  void put(json&& value) { place(std::move(value)); }
  void open(json&& empty_container) { open_.push_back(place(std::move(empty_container))); }
  void close() { open_.pop_back(); }
  // False when the open object already has this key (json::parse would keep the last value).
  bool key(const std::string& key) {
    auto [slot, added] = open_.back()->get_ref<json::object_t&>().try_emplace(key);
    slot_ = &slot->second;
    return added;
  }

 private:
  // Where the JSON puts a value: the target, the end of the open array, or the last key's slot.
  json* place(json&& value) {
    if (open_.empty()) {
      *target_ = std::move(value);
      return target_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      auto& items = parent.get_ref<json::array_t&>();
      items.push_back(std::move(value));
      return &items.back();
    }
    *slot_ = std::move(value);
    return slot_;
  }

  json* target_ = nullptr;
  std::vector<json*> open_;  // the value's open objects and arrays, innermost last
  json* slot_ = nullptr;     // where the value of the last key goes
};

// nlohmann's SAX interface over the header object: its keys are tensor names (and
// __metadata__), each value is built by a value_builder and checked when it ends. Problems are
// kept, not thrown, so that the order of precedence stays the one documented in the .hpp: the
// JSON may still turn out invalid further on.
class header_reader {
 public:
  explicit header_reader(const std::string& source) : source_(source) {}

  // The first problem, thrown; or the checked header.
  safetensors_header finish() {
    if (any_repeated_) {
      if (!repeated_parent_)
        throw_input(source_, fmt::format("duplicate tensor name '{}'", repeated_),
                    tensor_where(repeated_));
      throw_input(source_, fmt::format("duplicate key '{}'", repeated_),
                  *repeated_parent_ == "__metadata__" ? std::string("__metadata__")
                                                      : tensor_where(*repeated_parent_));
    }
    if (bad_entry_) std::rethrow_exception(bad_entry_);
    return std::move(header_);
  }

  bool start_object(std::size_t) {
    if (!header_open_) return header_open_ = true;  // the header's own object
    value().open(json::object());
    return ended();
  }
  bool end_object() {
    if (!builder_.building()) return true;  // the header's own object
    builder_.close();
    return ended();
  }
  bool start_array(std::size_t) {
    value().open(json::array());
    return ended();
  }
  bool end_array() {
    builder_.close();
    return ended();
  }
  bool key(json::string_t& key) {
    if (builder_.building()) {
      if (!builder_.key(key)) repeated(key, name_);
      return true;
    }
    name_ = key;  // a tensor's name, or __metadata__
    entry_ = nullptr;
    if (name_ == "__metadata__") {
      if (seen_metadata_) repeated(key, std::nullopt);
      seen_metadata_ = true;
    } else if (auto [it, added] = header_.tensors.try_emplace(name_); added) {
      entry_ = &it->second;
    } else {
      repeated(key, std::nullopt);
    }
    return true;
  }
  bool null() { return scalar(nullptr); }
  bool boolean(bool v) { return scalar(v); }
  bool number_integer(json::number_integer_t v) { return scalar(v); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return scalar(v); }
  bool string(json::string_t& v) { return scalar(std::move(v)); }
  bool binary(json::binary_t& v) { return scalar(json::binary(std::move(v))); }
  // nlohmann's parse_error or out_of_range, thrown as json::parse throws them.
  template <class exception_type>
  bool parse_error(std::size_t, const std::string&, const exception_type& e) {
    throw e;
  }

 private:
  // The builder, starting a new top-level value unless one is under way.
  value_builder& value() {
    if (!builder_.building()) builder_.start(value_);
    return builder_;
  }
  bool scalar(json&& v) {
    value().put(std::move(v));
    return ended();
  }
  // After an event of a top-level value: when that value is complete, checks it and drops it.
  bool ended() {
    if (builder_.building()) return true;
    try {
      if (name_ == "__metadata__")
        read_metadata(value_, header_.metadata, source_);
      else if (entry_ != nullptr)  // (nullptr: a repeated name, reported instead)
        *entry_ = check_entry(name_, value_, source_);
    } catch (const error&) {
      // The first bad entry in name order, as when the header was checked as a whole.
      if (!bad_entry_ || name_ < bad_name_) {
        bad_entry_ = std::current_exception();
        bad_name_ = name_;
      }
    }
    value_ = nullptr;
    return true;
  }
  // The first repeated key, in file order; parent is the top-level key whose value repeats it,
  // none for a repeated tensor name.
  void repeated(const std::string& key, std::optional<std::string> parent) {
    if (any_repeated_) return;
    any_repeated_ = true;
    repeated_ = key;
    repeated_parent_ = std::move(parent);
  }

  const std::string& source_;
  safetensors_header header_;
  bool header_open_ = false, seen_metadata_ = false;
  std::string name_;               // the top-level key whose value is being read
  tensor_entry* entry_ = nullptr;  // where its checked entry goes
  json value_;                     // that value
  value_builder builder_;
  bool any_repeated_ = false;
  std::string repeated_;
  std::optional<std::string> repeated_parent_;
  std::exception_ptr bad_entry_;
  std::string bad_name_;
};

}  // namespace

safetensors_header read_safetensors_header(std::string_view header, const std::string& source) {
  header_reader reader(source);
  try {
    json::sax_parse(header.begin(), header.end(), &reader);
  } catch (const json::parse_error& e) {
    throw_input(source, fmt::format("header is not valid JSON: {}", without_json_prefix(e)),
                fmt::format("byte {}", header_start + (e.byte > 0 ? e.byte - 1 : 0)));
  } catch (const json::out_of_range& e) {
    // A number beyond double (1e400): nlohmann tells it apart from syntax errors and gives no
    // position, but quotes the literal, which is found in the header instead.
    const std::string_view why = without_json_prefix(e);
    const size_t open = why.find('\''), close = why.rfind('\'');
    const std::string_view literal =
        open < close ? why.substr(open + 1, close - open - 1) : std::string_view();
    const size_t at = literal.empty() ? 0 : header.find(literal);
    throw_input(source,
                fmt::format("header is not valid JSON: number {} is out of range", shown(literal)),
                fmt::format("byte {}", header_start + (at == std::string_view::npos ? 0 : at)));
  } catch (const json::exception& e) {
    throw_input(source, fmt::format("header is not valid JSON: {}", without_json_prefix(e)),
                fmt::format("byte {}", header_start));
  }
  return reader.finish();
}

}  // namespace attn::io
