"""The input's fields as Parquet columns next to the codes, with one schema for the whole job.

Every shard must have the same schema (``datasets.load_dataset("parquet", ...)`` reads them as one
table), so the types are inferred once, from every row of the input, when the job starts (and again,
identically, when it resumes). A field whose values have no common Arrow type (a number in one row,
text in another) or no Parquet type (an empty object) is stored as JSON text; a field named like one
of our columns is stored as ``input_<name>``. Both are listed in the manifest and the dataset card.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

OUR_COLUMNS = (
    "index",
    "audio",
    "source",
    "source_sha256",
    "audio_codes",
    "frames",
    "original_samples",
    "duration_s",
    "model",
    "versions",
)  # the columns every shard has, before the input's fields
RENAMED_PREFIX = "input_"  # an input field named like one of OUR_COLUMNS is stored under this prefix
META_KEY = b"codec_workbench"  # Parquet schema metadata: which columns are fields, which hold JSON


@dataclass(frozen=True)
class FieldsPlan:
    schema: object  # pyarrow.Schema of the field columns, in first-seen order
    as_json: tuple[str, ...] = ()  # columns that hold JSON text
    renamed: dict[str, str] = field(default_factory=dict)  # input name -> column name

    @property
    def names(self) -> list[str]:
        return list(self.schema.names)  # type: ignore[attr-defined]

    def metadata(self) -> dict:
        return {"fields": self.names, "fields_as_json": list(self.as_json), "renamed": self.renamed}


def _column_name(name: str) -> str:
    return RENAMED_PREFIX + name if name in OUR_COLUMNS else name


def _renamed(row: dict) -> dict:
    return {_column_name(k): v for k, v in row.items()}


def _writable(arrow_type) -> bool:
    """Whether Parquet can store the type (a struct with no fields cannot)."""
    import pyarrow as pa

    if pa.types.is_struct(arrow_type):
        return arrow_type.num_fields > 0 and all(
            _writable(arrow_type.field(i).type) for i in range(arrow_type.num_fields)
        )
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _writable(arrow_type.value_type)
    return True


def plan_fields(extras) -> FieldsPlan:
    """The job's field columns, inferred from every row's fields (JSON objects)."""
    import pyarrow as pa

    raw = [json.loads(e) for e in extras]
    originals: dict[str, None] = {}
    for row in raw:
        originals.update(dict.fromkeys(row))
    rows = [_renamed(row) for row in raw]
    fields, as_json = [], []
    for original in originals:
        name = _column_name(original)
        values = [row.get(name) for row in rows]
        try:
            arrow_type = pa.array(values).type
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrow_type = None
        if arrow_type is None or not _writable(arrow_type):
            as_json.append(name)
            arrow_type = pa.string()
        fields.append(pa.field(name, arrow_type))
    renamed = {k: _column_name(k) for k in originals if k in OUR_COLUMNS}
    return FieldsPlan(pa.schema(fields), tuple(as_json), renamed)


def fields_columns(extras: list[str], plan: FieldsPlan) -> dict:
    """The field columns of some rows, typed by the plan."""
    import pyarrow as pa

    rows = [_renamed(json.loads(e)) for e in extras]
    columns = {}
    for f in plan.schema:  # type: ignore[attr-defined]
        values = [row.get(f.name) for row in rows]
        if f.name in plan.as_json:
            values = [None if v is None else json.dumps(v, ensure_ascii=False) for v in values]
        columns[f.name] = pa.array(values, type=f.type)
    return columns


def row_fields(table, row: int, meta: dict) -> dict:
    """One output row's input fields, as the input had them (JSON text parsed back, names restored)."""
    back = {v: k for k, v in meta.get("renamed", {}).items()}
    out = {}
    for name in meta.get("fields", []):
        value = table.column(name)[row].as_py()
        if name in meta.get("fields_as_json", []) and value is not None:
            value = json.loads(value)
        out[back.get(name, name)] = value
    return out
