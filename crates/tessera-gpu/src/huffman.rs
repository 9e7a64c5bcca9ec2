//! GPU huffman: placeholder, filled in by the huffman work.
