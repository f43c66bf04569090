// Embeds the public-domain prompt corpus into the binary so every worker,
// local or remote, builds the same prompts without a data file.
    .section .rodata
    .global surge_corpus_begin
    .global surge_corpus_end
    .balign 16
surge_corpus_begin:
    .incbin SURGE_CORPUS_PATH
surge_corpus_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
