// libsurge_sentencepiece.so: libsentencepiece behind a C interface
// (sentencepiece_module.h). Includes no abseil header: libsentencepiece's
// header declares its own absl::string_view.
#include "common/sentencepiece_module.h"

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "sentencepiece_processor.h"

extern "C" {

__attribute__((visibility("default"))) void* surge_spm_load(const char* path, char* error,
                                                            size_t error_size) {
  auto* processor = new sentencepiece::SentencePieceProcessor();
  const sentencepiece::util::Status status = processor->Load(path);
  if (status.ok()) return processor;
  const std::string reason = status.ToString();
  if (error_size > 0) {
    std::strncpy(error, reason.c_str(), error_size - 1);
    error[error_size - 1] = '\0';
  }
  delete processor;
  return nullptr;
}

__attribute__((visibility("default"))) void surge_spm_free(void* model) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(model);
}

__attribute__((visibility("default"))) void surge_spm_encode(const void* model, const char* text,
                                                             size_t size, SurgeSpmIdsSink sink,
                                                             void* context) {
  std::vector<int> ids;
  // Encode fails only on a model that is not loaded; load guarantees one.
  (void)static_cast<const sentencepiece::SentencePieceProcessor*>(model)->Encode(
      std::string_view(text, size), &ids);
  sink(context, ids.data(), ids.size());
}

__attribute__((visibility("default"))) int surge_spm_piece_size(const void* model) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(model)->GetPieceSize();
}

}  // extern "C"
