//! The `.tsr` container: see docs/format/container.md. (Filled in by the container work.)
