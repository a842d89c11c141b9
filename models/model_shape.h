// A resolved model's shape and size in one line, for people: what
// `hptctl status` and the job page print beside the preset's name, so a
// job trained with overrides (--d_model, --layers, ...) says what it is.
// Torch-free.
//
//   ModelShapeLine(config)
//   // "2 layers, d_model 32, 4 heads, FF x2, reduction 16; 19,105 parameters"
#ifndef HPT_MODELS_MODEL_SHAPE_H_
#define HPT_MODELS_MODEL_SHAPE_H_

#include <cstdint>
#include <string>

#include "proto/common.pb.h"

namespace hpt {

// Layers, width, heads, feed-forward multiplier, the dimension reduction's
// width, "embedding skip" where the head reads the embedding too, and the
// trainable parameters (models/model_flops.h, ParameterCount) with
// thousands grouped.
std::string ModelShapeLine(const ModelConfig& config);

// 25765377 -> "25,765,377".
std::string GroupThousands(int64_t n);

}  // namespace hpt

#endif  // HPT_MODELS_MODEL_SHAPE_H_
