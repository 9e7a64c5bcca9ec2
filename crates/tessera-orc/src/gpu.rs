//! GPU path (see docs/gpu/orc.md).
