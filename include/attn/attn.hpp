// attn — self-attention in plain C++: word vectors in, contextual embeddings out.
//
//   #include <attn/attn.hpp>
//   attn::vectors glove = attn::vectors::load_default();
//   attn::embedding e = attn::embed("he sat by the river bank", glove);
//   // e.tokens: the words; e.steps.weights: who attends to whom [N, N];
//   // e.steps.context: the contextual embeddings [N, 100].
#pragma once

#include "attn/detokenize.hpp"
#include "attn/embed.hpp"
#include "attn/error.hpp"
#include "attn/heatmap.hpp"
#include "attn/inspection.hpp"
#include "attn/linear.hpp"
#include "attn/mask.hpp"
#include "attn/multihead_attention.hpp"
#include "attn/npy.hpp"
#include "attn/safetensors.hpp"
#include "attn/scale.hpp"
#include "attn/task_kind.hpp"
#include "attn/sdpa.hpp"
#include "attn/sdpa_backward.hpp"
#include "attn/self_attention.hpp"
#include "attn/temporary_files.hpp"
#include "attn/tensor.hpp"
#include "attn/text_file.hpp"
#include "attn/text_model.hpp"
#include "attn/tokenizer.hpp"
#include "attn/train.hpp"
#include "attn/train_option_table.hpp"
#include "attn/vectors.hpp"
