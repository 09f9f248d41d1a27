"""Nested JSON records and position-ordered tables, mapped both ways from one declaration per record type.

TAU2 keeps a domain's data as nested JSON (a user holds their payment methods, an order its items). Our worlds
keep the same data as flat tables with a ``position`` column for every JSON collection. A domain declares each
record type once, as a :class:`Record`: its table, and its JSON fields in tau2's key order, each naming the
column(s) it lives in. Three things follow from that declaration:

- :meth:`Database.load`: fill empty tables from the JSON (tau2's ``db.json``);
- :meth:`Record.read`: one row back as its JSON record (what a tool prints, key for key as tau2 prints it);
- :meth:`Database.export`: the whole world back as tau2's JSON (what the conformance tests hash).

The kinds of field: a column (``"name"`` or :class:`Column`, with optional converters and a default), a
:class:`Group` (a nested object whose fields are columns of the same row), :class:`Many` (a list of child
records, or a map keyed by a child column) and :class:`Ids` (a list of single values from a child table).
A child table holds its parent's key under the same column name, and ``position``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

from sqlalchemy import Connection, Table, bindparam, insert, select

if TYPE_CHECKING:
    from mua_gym.world import World

__all__ = ["Column", "Database", "Group", "Ids", "Many", "Record"]

POSITION = "position"
REQUIRED: Any = object()  # a field's default when the JSON must give it


@dataclass(frozen=True)
class Column:
    """A JSON value kept in one column.

    ``load`` turns a given JSON value into what is stored and ``read`` turns a stored value back; neither sees
    ``None``, which is stored and read as is. ``default`` is stored as is when the JSON leaves the key out.
    """

    name: str
    load: Callable[[Any], Any] | None = None
    read: Callable[[Any], Any] | None = None
    default: Any = REQUIRED


@dataclass(frozen=True)
class Group:
    """A nested JSON object whose fields are columns of the record's own row (a user's ``name``, ``address``).
    ``optional``: the JSON may leave the object out, or give null, and every column is then ``None``."""

    fields: Mapping[str, str | Column]
    optional: bool = False


@dataclass(frozen=True)
class Many:
    """Child records in the child table, in ``position`` order: a JSON list, or with ``keyed`` a JSON object
    keyed by the child's :attr:`Record.key` column. The JSON may leave it out when ``default_empty``."""

    record: Record
    keyed: bool = False
    default_empty: bool = False


@dataclass(frozen=True)
class Ids:
    """A JSON list of single values (a user's order ids), one row each of ``table`` in ``position`` order,
    in its ``column``. The JSON may leave it out when ``default_empty``."""

    table: Table
    column: str
    default_empty: bool = False


Field = Union[str, Column, Group, Many, Ids]


def _column(spec: str | Column) -> Column:
    return Column(spec) if isinstance(spec, str) else spec


Reader = Callable[["World", Mapping[str, Any]], dict[str, Any]]


def _compiled(source: str, names: dict[str, Any], function: str, filename: str) -> Any:
    """The function ``source`` defines, built from a declaration (never from data), with ``names`` in scope."""
    exec(compile(source, filename, "exec"), names)  # noqa: S102
    return names[function]


class _Bulk:
    """One export's reading: the world, and each child collection's records for every parent, fetched on first use."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.grouped: dict[Any, dict[Any, Any]] = {}


def _bulk_value(group: Callable[[_Bulk], dict[Any, Any]], empty: Callable[[], Any], bulk: _Bulk, parent: Any) -> Any:
    grouped = bulk.grouped.get(group)
    if grouped is None:
        grouped = bulk.grouped[group] = group(bulk)
    found = grouped.get(parent)
    return empty() if found is None else found


@dataclass
class Record:
    """One record type: its ``table``, and its JSON ``fields`` in output order (JSON key -> where it lives).

    ``key``: the column whose value keys the record in a keyed :class:`Many` (it is filled from the JSON map's
    key on load, even when no field names it). ``parent``: the column holding the parent record's key, for a
    child record (by default the parent's ``key``, or the first primary key column of the parent table).
    ``shape``: for tau2's union types, the JSON keys a row's record has (a credit card has a brand, a gift card
    a balance); the JSON keys a given record leaves out are stored as ``None`` unless their column says otherwise.

    ``read(world, row)`` gives the JSON record of ``row`` (a dict of this table's columns): the declared keys in
    order, each value converted back as its column says, child collections fetched from ``world``. It is compiled
    from the declaration into the dict display one would write by hand (``reader_source()`` shows it), because
    tools call it on every look-up.
    """

    table: Table
    fields: Mapping[str, Field]
    key: str | None = None
    parent: str | None = None
    shape: Callable[[Mapping[str, Any]], Sequence[str]] | None = None
    read: Reader = field(init=False, repr=False, compare=False)
    _plain: bool = field(default=False, init=False, repr=False)
    _row: Callable[[Mapping[str, Any], int], dict[str, Any]] | None = field(default=None, init=False, repr=False,
                                                                             compare=False)
    _collections: tuple[tuple[str, Many | Ids], ...] = field(default=(), init=False, repr=False)
    _bulk_read: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._plain = self.shape is None and all(  # a row of its fields, named by key, is its record
            isinstance(spec, (str, Column)) and _column(spec).read is None for spec in self.fields.values())
        self._collections = tuple((k, spec) for k, spec in self.fields.items() if isinstance(spec, (Many, Ids)))
        self.read = self._reader(bulk=False)

    def own_key(self) -> str:
        """The column a child row names this record by: ``key``, else the table's first primary key column."""
        return self.key or next(iter(self.table.primary_key.columns)).name

    def columns_read(self) -> list[str]:
        """The columns :meth:`read` needs of a row: every field's, the key, and the own key when there are children."""
        names: list[str] = []
        for spec in self.fields.values():
            if isinstance(spec, (str, Column)):
                names.append(_column(spec).name)
            elif isinstance(spec, Group):
                names += [_column(c).name for c in spec.fields.values()]
            else:
                names.append(self.own_key())
        if self.key is not None:
            names.append(self.key)
        return list(dict.fromkeys(names))

    # -- reading ---------------------------------------------------------------------------------------------

    def reader_source(self, keys: Sequence[str] | None = None, bulk: bool = False) -> tuple[str, dict[str, Any]]:
        """(the source of the reader for ``keys``, by default every field, and the names it uses). A ``bulk``
        reader takes an export's :class:`_Bulk` in place of the world, and finds child rows fetched for all."""
        names: dict[str, Any] = {}

        def value(spec: str | Column) -> str:
            column = _column(spec)
            if column.read is None:
                return f"row[{column.name!r}]"
            name = f"_read{len(names)}"
            names[name] = column.read
            return f"(None if (v := row[{column.name!r}]) is None else {name}(v))"

        parts = []
        for json_key in self.fields if keys is None else keys:
            spec = self.fields[json_key]
            if isinstance(spec, (str, Column)):
                parts.append(f"{json_key!r}: {value(spec)}")
            elif isinstance(spec, Group):
                inner = ", ".join(f"{k!r}: {value(c)}" for k, c in spec.fields.items())
                parts.append(f"{json_key!r}: {{{inner}}}")
            else:
                name = f"_children{len(names)}"
                names[name] = self._bulk_children(spec) if bulk else self._children_reader(spec)
                parts.append(f"{json_key!r}: {name}(world, row[{self.own_key()!r}])")
        body = ",\n        ".join(parts)
        return f"def read(world, row):\n    return {{\n        {body},\n    }}\n", names

    def _reader(self, bulk: bool) -> Reader:
        """The compiled reader (with a ``shape``, one per shape, compiled on its first use)."""
        def compiled(keys: Sequence[str]) -> Reader:
            return _compiled(*self.reader_source(keys, bulk), "read", f"<record {self.table.name}>")  # type: ignore

        if self.shape is None:
            return compiled(tuple(self.fields))
        shape, by_shape = self.shape, {}

        def read(world: Any, row: Mapping[str, Any]) -> dict[str, Any]:
            keys = tuple(shape(row))
            found = by_shape.get(keys)
            if found is None:
                found = by_shape[keys] = compiled(keys)
            return found(world, row)

        return read

    def bulk_reader(self) -> Callable[[_Bulk, Mapping[str, Any]], dict[str, Any]]:
        """:meth:`read` for a whole export: each child collection is one query for every parent, not one each."""
        if self._bulk_read is None:
            self._bulk_read = self._reader(bulk=True)
        return self._bulk_read  # type: ignore[no-any-return]

    def _bulk_children(self, spec: Many | Ids) -> Callable[[_Bulk, Any], Any]:
        """A function (export context, this record's key) -> one child collection, read for all parents at once."""
        own = self.own_key()
        if isinstance(spec, Ids):
            table = spec.table
            stmt = (select(table.c[own].label("_parent"), table.c[spec.column].label("_value"))
                    .order_by(table.c[own], table.c[POSITION]))

            def group(bulk: _Bulk) -> dict[Any, Any]:
                grouped: dict[Any, list[Any]] = {}
                for r in bulk.world.fetch_all(stmt):
                    grouped.setdefault(r["_parent"], []).append(r["_value"])
                return grouped

            return partial(_bulk_value, group, list)
        child, table = spec.record, spec.record.table
        link = table.c[child.parent or own]
        stmt = (select(*[table.c[name] for name in child.columns_read()], link.label("_parent"))
                .order_by(link, table.c[POSITION]))
        key = child.key if spec.keyed else None
        assert key is not None or not spec.keyed, f"a keyed collection of {table.name} needs a key"

        def group_records(bulk: _Bulk) -> dict[Any, Any]:
            read, grouped = child.bulk_reader(), {}
            for r in bulk.world.fetch_all(stmt):
                if key is None:
                    grouped.setdefault(r["_parent"], []).append(read(bulk, r))
                else:
                    grouped.setdefault(r["_parent"], {})[r[key]] = read(bulk, r)
            return grouped

        return partial(_bulk_value, group_records, list if key is None else dict)

    def _children_reader(self, spec: Many | Ids) -> Callable[[World, Any], Any]:
        """A function (world, this record's key) -> the JSON value of one child collection, in position order."""
        own = self.own_key()
        if isinstance(spec, Ids):
            table = spec.table
            ids = select(table.c[spec.column]).where(table.c[own] == bindparam("parent")).order_by(table.c[POSITION])
            return lambda world, parent: world.fetch_column(ids, parent=parent)
        child, table = spec.record, spec.record.table
        link = table.c[child.parent or own]
        if child._plain and not spec.keyed:  # its rows are its records already: its fields, named by key
            labelled = [table.c[_column(c).name].label(k) for k, c in child.fields.items()]  # type: ignore[arg-type]
            plain = select(*labelled).where(link == bindparam("parent")).order_by(table.c[POSITION])
            return lambda world, parent: world.fetch_all(plain, parent=parent)
        stmt = (select(*[table.c[name] for name in child.columns_read()]).where(link == bindparam("parent"))
                .order_by(table.c[POSITION]))
        read = child.read
        if spec.keyed:
            key = child.key
            assert key is not None, f"a keyed collection of {table.name} needs a key"
            return lambda world, parent: {r[key]: read(world, r) for r in world.fetch_all(stmt, parent=parent)}
        return lambda world, parent: [read(world, r) for r in world.fetch_all(stmt, parent=parent)]

    # -- loading ---------------------------------------------------------------------------------------------

    def row_source(self) -> tuple[str, dict[str, Any]]:
        """(the source of the function building this record's own row from its JSON, and the names it uses).

        A missing key raises ``KeyError`` unless its column has a default (for a ``shape``d record, ``None``)."""
        names: dict[str, Any] = {"MISSING": REQUIRED}

        def value(spec: str | Column, source: str) -> str:
            column = _column(spec)
            default = None if self.shape is not None and column.default is REQUIRED else column.default
            load = ""
            if column.load is not None:
                load = f"_load{len(names)}"
                names[load] = column.load
            if default is REQUIRED or default is None:
                got = f"{source}[{{k!r}}]" if default is REQUIRED else f"{source}.get({{k!r}})"
                return got if not load else f"(None if (v := {got}) is None else {load}(v))"
            fallback = f"_default{len(names)}"
            names[fallback] = default
            got = f"(v := {source}.get({{k!r}}, MISSING))"
            return f"({fallback} if {got} is MISSING else {'v' if not load else f'None if v is None else {load}(v)'})"

        lines, parts = [], ["'position': position"]
        for json_key, spec in self.fields.items():
            if isinstance(spec, (str, Column)):
                parts.append(f"{_column(spec).name!r}: " + value(spec, "source").format(k=json_key))
            elif isinstance(spec, Group):
                group = f"g{len(lines)}"
                lines.append(f"{group} = source.get({json_key!r})" if spec.optional
                             else f"{group} = source[{json_key!r}]")
                for k, c in spec.fields.items():
                    got = value(c, group).format(k=k)
                    parts.append(f"{_column(c).name!r}: " + (f"(None if {group} is None else {got})" if spec.optional
                                                            else got))
        body = "".join(f"    {line}\n" for line in lines)
        fields = ",\n        ".join(parts)
        return f"def row(source, position):\n{body}    return {{\n        {fields},\n    }}\n", names

    def row_builder(self) -> Callable[[Mapping[str, Any], int], dict[str, Any]]:
        """The compiled function (JSON record, position) -> this record's own row; compiled on first use, since
        only a load needs it."""
        if self._row is None:
            self._row = _compiled(*self.row_source(), "row", f"<rows of {self.table.name}>")
        return self._row

    def rows(self, source: Mapping[str, Any], position: int, into: defaultdict[Table, list[dict[str, Any]]],
             map_key: Any = None) -> None:
        """Appends the rows of one top-level JSON record (its own, then its children's) to ``into``, per table."""
        row = self.row_builder()(source, position)
        if self.key is not None and map_key is not None:
            row[self.key] = map_key
        into[self.table].append(row)
        if self._collections:
            self._children_rows(source, row, into)

    def _children_rows(self, source: Mapping[str, Any], row: dict[str, Any],
                       into: defaultdict[Table, list[dict[str, Any]]]) -> None:
        own = self.own_key()
        parent = row[own]
        for json_key, spec in self._collections:
            if json_key not in source:
                if not spec.default_empty:
                    raise KeyError(f"{json_key!r} missing from a JSON record")
                continue
            value = source[json_key]
            if isinstance(spec, Ids):
                into[spec.table].extend({own: parent, POSITION: i, spec.column: v} for i, v in enumerate(value))
                continue
            child = spec.record
            link, key, out = child.parent or own, child.key if spec.keyed else None, into[child.table]
            build = child.row_builder()
            for i, (k, v) in enumerate(value.items() if spec.keyed else ((None, v) for v in value)):
                child_row = build(v, i)
                child_row[link] = parent
                if key is not None:
                    child_row[key] = k
                out.append(child_row)
                if child._collections:
                    child._children_rows(v, child_row, into)


@dataclass
class Database:
    """A domain's whole JSON database: its top-level collections (JSON key -> :class:`Many`), in tau2's order."""

    collections: Mapping[str, Many]
    _all: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def load(self, conn: Connection, db: Mapping[str, Any]) -> None:
        """Fills the declared (empty) tables from ``db``, the parsed JSON; parents are inserted first."""
        into: defaultdict[Table, list[dict[str, Any]]] = defaultdict(list)
        for json_key, spec in self.collections.items():
            if json_key not in db:
                if not spec.default_empty:
                    raise KeyError(f"{json_key!r} missing from the database")
                continue
            value = db[json_key]
            items = value.items() if spec.keyed else ((None, v) for v in value)
            for i, (k, v) in enumerate(items):
                spec.record.rows(v, i, into, k)
        for table in next(iter(into)).metadata.sorted_tables if into else ():  # parents before children
            if into.get(table):
                conn.execute(insert(table), into[table])

    def export(self, world: World) -> dict[str, Any]:
        """Every collection read back from ``world``, in the shape ``load`` takes (child tables are read whole,
        once each: an export costs a query per table, not per record)."""
        out: dict[str, Any] = {}
        bulk = _Bulk(world)
        for json_key, spec in self.collections.items():
            stmt = self._all.get(json_key)
            if stmt is None:
                table = spec.record.table
                stmt = self._all[json_key] = select(table).order_by(table.c[POSITION])
            rows = world.fetch_all(stmt)
            record, read = spec.record, spec.record.bulk_reader()
            if spec.keyed:
                assert record.key is not None, f"a keyed collection of {record.table.name} needs a key"
                out[json_key] = {r[record.key]: read(bulk, r) for r in rows}
            else:
                out[json_key] = [read(bulk, r) for r in rows]
        return out
