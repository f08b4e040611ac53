// The default word vectors, embedded in the library at build time (see CMakeLists.txt).
    .section .rodata
    .balign 64
    .global attn_default_vectors_begin
attn_default_vectors_begin:
    .incbin ATTN_DEFAULT_VECTORS_PATH
    .global attn_default_vectors_end
attn_default_vectors_end:
    .section .note.GNU-stack,"",@progbits
