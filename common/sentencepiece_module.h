// The C interface of surge's SentencePiece module (libsurge_sentencepiece.so,
// built from sentencepiece_module.cc), which common/sentencepiece_model.cc
// loads with dlopen.
//
// Why a module: Debian's libsentencepiece carries its own copy of the
// protobuf-lite runtime and exports its symbols. Linked into the surge
// binary, those symbols take the place of libprotobuf's own and the process
// crashes while registering surge's protos. Loaded with RTLD_LOCAL |
// RTLD_DEEPBIND, the module and libsentencepiece see only their own copy,
// and the rest of surge never sees it.
#ifndef SURGE_COMMON_SENTENCEPIECE_MODULE_H_
#define SURGE_COMMON_SENTENCEPIECE_MODULE_H_

#include <cstddef>

extern "C" {

// The module's file name, looked up next to the running executable and then
// at the path the build put it (SURGE_SENTENCEPIECE_MODULE_PATH).
#define SURGE_SENTENCEPIECE_MODULE_NAME "libsurge_sentencepiece.so"

// Loads the model at `path`; null on failure, with the reason in `error`
// (NUL-terminated, cut to error_size bytes).
typedef void* (*SurgeSpmLoadFn)(const char* path, char* error, size_t error_size);
// Frees a model from load.
typedef void (*SurgeSpmFreeFn)(void* model);
// Encodes `size` bytes of `text` and hands the piece ids to `sink` in one
// call.
typedef void (*SurgeSpmIdsSink)(void* context, const int* ids, size_t count);
typedef void (*SurgeSpmEncodeFn)(const void* model, const char* text, size_t size,
                                 SurgeSpmIdsSink sink, void* context);
// The vocabulary's size.
typedef int (*SurgeSpmPieceSizeFn)(const void* model);

}  // extern "C"

#endif  // SURGE_COMMON_SENTENCEPIECE_MODULE_H_
