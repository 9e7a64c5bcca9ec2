//! GPU bitmap: placeholder, filled in by the bitmap work.
