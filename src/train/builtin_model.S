// The built-in context model (data/context-wikipedia.safetensors, made by
// scripts/make_builtin_context_model.py), embedded in the library at build time like the default
// vectors: hidden symbols, read only by builtin_model.cpp.
    .section .rodata
    .balign 64
    .global attn_builtin_model_begin
    .hidden attn_builtin_model_begin
attn_builtin_model_begin:
    .incbin ATTN_BUILTIN_MODEL_PATH
    .global attn_builtin_model_end
    .hidden attn_builtin_model_end
attn_builtin_model_end:
    .section .note.GNU-stack,"",@progbits
