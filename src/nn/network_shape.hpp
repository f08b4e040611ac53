// The sizes and choices a text model is built from (the model file's configuration, mapped by
// train::network_shape_for), shared by the trunk and the heads.
#pragma once

#include <cstdint>

namespace attn::nn {

enum class pool_kind { mean, max, mean_max, attention, token };

struct network_shape {
  int64_t vocabulary = 0;  // rows of the (pre-trained or learned) embedding table
  int64_t new_words = 0;   // rows learned for words the pre-trained table lacks (ids after it)
  int64_t embed = 0;       // Ein, the embedding width
  int64_t width = 0;       // E, the attention width
  int64_t heads = 1;       // H
  int64_t layers = 0;      // 0: the seeds' bare attention layer; N: N encoder layers (Ein == E)
  int64_t feedforward = 0; // the encoder layers' feed-forward width
  // Encoder layers pre-norm (PyTorch's norm_first=True, GPT-2's blocks), followed by a final
  // LayerNorm (GPT-2's ln_f, PyTorch's TransformerEncoder(norm=…)), since the residual stream
  // leaves the last block unnormalised.
  bool norm_first = false;
  pool_kind pool = pool_kind::mean;
  int64_t hidden = 0;      // the MLP's hidden width
  int64_t classes = 0;     // C: output words or labels
  int64_t positions = 0;   // rows of the learned positional table; 0 = none
  int64_t window = 0;      // tokens per word window before the attention (Ein → Ein); 0 = none
  bool causal = false;     // next-word: query t sees tokens ≤ t
  bool train_embeddings = true;  // the table's rows (new words' rows always train)
  double dropout = 0;      // on the embeddings and on the pooled vector, while training
  // Tied output (the masked-word model; pool = token, hidden = embed): class c scores
  // hidden·table[output_rows[c]] + bias[c] (network's output_rows), the table being the
  // embedding rows (new words' rows after the vocabulary's, as ids are).
  bool tied_output = false;

  int64_t pooled() const { return pool == pool_kind::mean_max ? 2 * width : width; }
};

}  // namespace attn::nn
