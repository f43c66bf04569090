// Embeds plotly.min.js (npm plotly.js-dist-min, pinned in package.json) into
// the binary, so every HTML page carries it inline and works offline
// (R-PLOT-2). The path comes from CMake (SURGE_PLOTLY_JS).
    .section .rodata
    .global surge_plotly_js_begin
    .global surge_plotly_js_end
    .balign 16
surge_plotly_js_begin:
    .incbin SURGE_PLOTLY_JS_PATH
surge_plotly_js_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
