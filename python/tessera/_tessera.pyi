"""Type stubs for the extension module (crates/tessera-python); use the functions in ``tessera``."""

from typing import Any, Dict, List, Optional

import pyarrow as pa

DEFAULT_CHUNK_VALUES: int

class TesseraError(Exception): ...

def write_table(
    data: Any,
    path: str,
    codec: str,
    chunk_values: Optional[int],
    dictionary: str,
    floats: str,
    runs: str,
) -> None: ...
def read_table(path: str, columns: Optional[List[str]], device: str) -> pa.Table: ...
def read_batches(path: str, columns: Optional[List[str]], batch_rows: Optional[int]) -> pa.RecordBatchReader: ...
def read_schema(path: str) -> pa.Schema: ...
def inspect(path: str) -> Dict[str, Any]: ...
def _panic_for_tests(message: str) -> None: ...
