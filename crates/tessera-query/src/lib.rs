//! tessera-query: tile-based query operators over compressed columns.
