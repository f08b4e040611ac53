// The built-in context model: a masked-word model trained on Wikipedia over the embedded GloVe
// vectors (see data/NOTICE.md), stored as a model file inside the library. It holds only what
// training learned; its input vectors are the embedded defaults, as in any model trained on them.
#include <string>

#include "attn/text_model.hpp"

extern "C" __attribute__((visibility("hidden"))) const unsigned char attn_builtin_model_begin[];
extern "C" __attribute__((visibility("hidden"))) const unsigned char attn_builtin_model_end[];
extern "C" __attribute__((visibility("hidden"))) const unsigned char attn_builtin_lm_begin[];
extern "C" __attribute__((visibility("hidden"))) const unsigned char attn_builtin_lm_end[];

namespace attn {

text_model text_model::builtin() {
  const std::string bytes(reinterpret_cast<const char*>(attn_builtin_model_begin),
                          static_cast<size_t>(attn_builtin_model_end - attn_builtin_model_begin));
  return decode(bytes, "<builtin>");
}

text_model text_model::builtin_lm() {
  const std::string bytes(reinterpret_cast<const char*>(attn_builtin_lm_begin),
                          static_cast<size_t>(attn_builtin_lm_end - attn_builtin_lm_begin));
  return decode(bytes, "<builtin-lm>");
}

}  // namespace attn
