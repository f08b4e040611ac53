// The page's script (page_script.js), embedded in the library at build time like the default
// vectors: one NUL-terminated string, a hidden symbol read only by page_script.cpp.
    .section .rodata
    .global attn_page_script
    .hidden attn_page_script
attn_page_script:
    // The pages have always opened their script with a newline after <script>.
    .ascii "\n"
    .incbin ATTN_PAGE_SCRIPT_PATH
    .byte 0
    .section .note.GNU-stack,"",@progbits
