// The built-in language model (data/lm-wikipedia.safetensors, made by scripts/make_builtin_lm.py),
// embedded in the library at build time like the context model: hidden symbols, read only by
// builtin_model.cpp.
    .section .rodata
    .balign 64
    .global attn_builtin_lm_begin
    .hidden attn_builtin_lm_begin
attn_builtin_lm_begin:
    .incbin ATTN_BUILTIN_LM_PATH
    .global attn_builtin_lm_end
    .hidden attn_builtin_lm_end
attn_builtin_lm_end:
    .section .note.GNU-stack,"",@progbits
