#!/usr/bin/python3
"""Writes an ONNX model of a whole multi-head attention layer for ONNX Runtime, to time against
`attn bench --mha`: the Q, K and V projections (MatMul + Add), com.microsoft.MultiHeadAttention,
then the output projection (MatMul + Add).

usage: make_mha_layer_onnx.py B N H D OUT.onnx [causal]
Inputs q, k, v [B, N, E = H·D] (the same array for self-attention), output o [B, N, E]: the
input names of ../shared/peers/ort_mha.js, so that runner times this model unchanged.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

B, N, H, D = map(int, sys.argv[1:5])
out_path = sys.argv[5]
causal = len(sys.argv) > 6 and sys.argv[6] == "causal"
E = H * D
rng = np.random.default_rng(42)


def init(name, shape):
    scale = 1.0 / np.sqrt(E)  # PyTorch-like initial scale, as attn bench --mha uses
    return numpy_helper.from_array(rng.uniform(-scale, scale, shape).astype(np.float32), name)


initializers, nodes = [], []
for x in "qkv":
    initializers += [init(f"W{x}", (E, E)), init(f"b{x}", (E,))]
    nodes += [helper.make_node("MatMul", [x, f"W{x}"], [f"{x}_mm"]),
              helper.make_node("Add", [f"{x}_mm", f"b{x}"], [f"{x}_proj"])]
attrs = {"num_heads": H}
if causal:
    attrs["unidirectional"] = 1
nodes.append(helper.make_node("MultiHeadAttention", ["q_proj", "k_proj", "v_proj"], ["attn"],
                              domain="com.microsoft", **attrs))
initializers += [init("Wo", (E, E)), init("bo", (E,))]
nodes += [helper.make_node("MatMul", ["attn", "Wo"], ["o_mm"]),
          helper.make_node("Add", ["o_mm", "bo"], ["o"])]
io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [B, N, E]) for n in "qkvo"]
graph = helper.make_graph(nodes, "mha_layer", io[:3], io[3:], initializer=initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.microsoft", 1)])
model.ir_version = 8
onnx.save(model, out_path)
