//! GPU lll: placeholder, filled in by the lll work.
