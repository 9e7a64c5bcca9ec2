// huffman.cu: placeholder, filled in by the huffman work.
#include "include/common.cuh"
