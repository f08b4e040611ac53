// The default word vectors, embedded in the library at build time (see CMakeLists.txt).
// The symbols are hidden: only default_vectors.cpp reads them, so a shared libattn neither
// exports them nor reaches them through its symbol table (no text relocations; PIC-safe).
    .section .rodata
    .balign 64
    .global attn_default_vectors_begin
    .hidden attn_default_vectors_begin
attn_default_vectors_begin:
    .incbin ATTN_DEFAULT_VECTORS_PATH
    .global attn_default_vectors_end
    .hidden attn_default_vectors_end
attn_default_vectors_end:
    .section .note.GNU-stack,"",@progbits
