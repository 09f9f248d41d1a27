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
A child table holds its parent's key under the same column name, and ``position``. A top-level object that is
one row, not a collection (telecom's phone), is :class:`One`.

Checking what is loaded: a column's ``load`` may be a check (:func:`one_of`, :func:`boolean`, :func:`text`,
:func:`number`) and a ``strict`` record refuses JSON keys it does not declare; a failed check raises
``ValueError`` naming the table and the JSON key.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence, Union

from sqlalchemy import Connection, Table, bindparam, insert, select

if TYPE_CHECKING:
    from mua_gym.world import World

__all__ = ["Column", "Database", "Group", "Ids", "Many", "One", "Record", "boolean", "insert_rows", "number", "one_of",
           "text"]

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

    ``optional``: the JSON may leave the object out, or give null, and every column is then ``None``; with
    ``present``, the column that tells whether it was given (a flag column of its own, stored true or false, or
    one of its fields' columns, never null when given), it reads back as null when absent.
    ``default``: the JSON object loaded when the JSON leaves it out or gives null (``{}``: every column's default).
    """

    fields: Mapping[str, str | Column]
    optional: bool = False
    present: str | None = None
    default: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Many:
    """Child records in the child table, in ``position`` order: a JSON list, or with ``keyed`` a JSON object
    keyed by the child's :attr:`Record.key` column. The JSON may leave it out when ``default_empty``, or leave it
    out or give null when there is a ``default`` (the JSON value loaded then). ``linked=False``: the child
    table has no column naming its parent, since it holds the children of one record only (a :class:`One`)."""

    record: Record
    keyed: bool = False
    default_empty: bool = False
    default: Any = None
    linked: bool = True


@dataclass(frozen=True)
class One:
    """A top-level JSON object kept as the one row of its record's table, with the ``fixed`` column values
    (its id). The JSON may leave it out or give null when there is a ``default`` (the JSON object loaded then)."""

    record: Record
    fixed: Mapping[str, Any] = field(default_factory=dict)
    default: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Ids:
    """A JSON list of single values (a user's order ids), one row each of ``table`` in ``position`` order,
    in its ``column``. The JSON may leave it out when ``default_empty``."""

    table: Table
    column: str
    default_empty: bool = False


Field = Union[str, Column, Group, Many, Ids]


def one_of(*values: Any) -> Callable[[Any], Any]:
    """A ``load`` check: the value must be one of ``values`` (an enum)."""
    def check(value: Any) -> Any:
        if value not in values:
            raise ValueError(f"{value!r} is not one of {', '.join(map(str, values))}")
        return value
    return check


def boolean(value: Any) -> bool:
    """A ``load`` check: the value must be a JSON boolean."""
    if not isinstance(value, bool):
        raise ValueError(f"expected a boolean, got {value!r}")
    return value


def text(value: Any) -> str:
    """A ``load`` check: the value must be a string."""
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {value!r}")
    return value


def number(value: Any) -> float:
    """A ``load`` check: the value must be a number; it is stored as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _column(spec: str | Column) -> Column:
    return Column(spec) if isinstance(spec, str) else spec


def _checked(source: Any, known: frozenset[str], where: str) -> Any:
    """``source`` if it is a JSON object with only ``known`` keys; else a ValueError that says where."""
    if not isinstance(source, Mapping):
        raise ValueError(f"{where}: expected an object, got {type(source).__name__}")
    unknown = sorted(set(source) - known)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}")
    return source


def _absent(flag: Any) -> bool:
    """Whether a group's ``present`` column says it was not given: null, or a false flag (0 from SQLite)."""
    return flag is None or (type(flag) in (bool, int) and not flag)


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
    ``strict``: a JSON record (and each of its groups) with a key the declaration does not name fails to load.

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
    strict: bool = False
    read: Reader = field(init=False, repr=False, compare=False)
    _plain: bool = field(default=False, init=False, repr=False)
    _row: Callable[[Mapping[str, Any], int], dict[str, Any]] | None = field(default=None, init=False, repr=False,
                                                                             compare=False)
    _collections: tuple[tuple[str, Many | Ids], ...] = field(default=(), init=False, repr=False)
    _names_key: bool = field(default=False, init=False, repr=False)  # a JSON field of its own holds its key
    _bulk_read: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._plain = self.shape is None and all(  # a row of its fields, named by key, is its record
            isinstance(spec, (str, Column)) and _column(spec).read is None for spec in self.fields.values())
        self._collections = tuple((k, spec) for k, spec in self.fields.items() if isinstance(spec, (Many, Ids)))
        self._names_key = self.key in [_column(s).name for s in self.fields.values() if isinstance(s, (str, Column))]
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
                if spec.present is not None:
                    names.append(spec.present)
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
                if spec.present is None:
                    parts.append(f"{json_key!r}: {{{inner}}}")
                else:
                    names["_absent"] = _absent
                    parts.append(f"{json_key!r}: None if _absent(row[{spec.present!r}]) else {{{inner}}}")
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
        if isinstance(spec, Many) and not spec.linked:  # one parent: the whole table is its children
            whole = self._children_reader(spec)
            return lambda bulk, parent: whole(bulk.world, parent)
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
        link = (table.c[child.parent or own] == bindparam("parent"),) if spec.linked else ()
        if child._plain and not spec.keyed:  # its rows are its records already: its fields, named by key
            labelled = [table.c[_column(c).name].label(k) for k, c in child.fields.items()]  # type: ignore[arg-type]
            plain = select(*labelled).where(*link).order_by(table.c[POSITION])
            if not link:
                return lambda world, parent: world.fetch_all(plain)
            return lambda world, parent: world.fetch_all(plain, parent=parent)
        stmt = select(*[table.c[name] for name in child.columns_read()]).where(*link).order_by(table.c[POSITION])
        read = child.read
        if spec.keyed:
            key = child.key
            assert key is not None, f"a keyed collection of {table.name} needs a key"
            if not link:
                return lambda world, parent: {r[key]: read(world, r) for r in world.fetch_all(stmt)}
            return lambda world, parent: {r[key]: read(world, r) for r in world.fetch_all(stmt, parent=parent)}
        if not link:
            return lambda world, parent: [read(world, r) for r in world.fetch_all(stmt)]
        return lambda world, parent: [read(world, r) for r in world.fetch_all(stmt, parent=parent)]

    # -- loading ---------------------------------------------------------------------------------------------

    def row_source(self) -> tuple[str, dict[str, Any]]:
        """(the source of the function building this record's own row from its JSON, and the names it uses).

        A missing key raises ``KeyError`` unless its column has a default (for a ``shape``d record, ``None``); a
        failed ``load`` check, or (``strict``) an undeclared key, raises ``ValueError``."""
        names: dict[str, Any] = {"MISSING": REQUIRED, "_checked": _checked}
        table = self.table.name

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

        def known(keys: Any) -> str:
            name = f"_known{len(names)}"
            names[name] = frozenset(keys)
            return name

        lines = [f"_checked(source, {known(self.fields)}, {table!r})"] if self.strict else []
        parts = ["'position': position"] if POSITION in self.table.c else []
        for json_key, spec in self.fields.items():
            if isinstance(spec, (str, Column)):
                parts.append(f"{_column(spec).name!r}: " + value(spec, "source").format(k=json_key))
            elif isinstance(spec, Group):
                group, where = f"g{len(lines)}", f"{table}.{json_key}"
                lines.append(f"{group} = source.get({json_key!r})" if spec.optional or spec.default is not None
                             else f"{group} = source[{json_key!r}]")
                if spec.default is not None:
                    fallback = f"_default{len(names)}"
                    names[fallback] = spec.default
                    lines.append(f"{group} = {fallback} if {group} is None else {group}")
                if self.strict:
                    check = f"_checked({group}, {known(spec.fields)}, {where!r})"
                    lines.append(f"{check} if {group} is not None else None" if spec.optional else check)
                columns = [_column(c).name for c in spec.fields.values()]
                if spec.optional and spec.present is not None and spec.present not in columns:
                    parts.append(f"{spec.present!r}: {group} is not None")
                for k, c in spec.fields.items():
                    got = value(c, group).format(k=k)
                    parts.append(f"{_column(c).name!r}: " + (f"(None if {group} is None else {got})" if spec.optional
                                                            else got))
        body = "".join(f"    {line}\n" for line in lines)
        fields = ",\n        ".join(parts)
        return f"def row(source, position):\n{body}    return {{\n        {fields},\n    }}\n", names

    def _failed_check(self, source: Any, exc: Exception) -> Exception:
        """The error to raise when building ``source``'s row failed with ``exc``: a ValueError naming the JSON key
        whose ``load`` refused its value (found again here, so that loading pays nothing for it), else ``exc``."""
        for json_key, spec in self.fields.items():
            if isinstance(spec, (str, Column)):
                checks = [(json_key, _column(spec), source)]
            elif isinstance(spec, Group) and isinstance(source, Mapping):
                group = source.get(json_key)
                group = spec.default if group is None else group
                checks = [(f"{json_key}.{k}", _column(c), group) for k, c in spec.fields.items()
                          if isinstance(group, Mapping)]
            else:
                continue
            for where, column, holder in checks:
                got = holder.get(where.rsplit(".", 1)[-1]) if isinstance(holder, Mapping) else None
                if column.load is not None and got is not None:
                    try:
                        column.load(got)
                    except (ValueError, TypeError) as found:
                        return ValueError(f"{self.table.name}.{where}: {found}")
        return exc

    def row_builder(self) -> Callable[[Mapping[str, Any], int], dict[str, Any]]:
        """The compiled function (JSON record, position) -> this record's own row; compiled on first use, since
        only a load needs it."""
        if self._row is None:
            self._row = _compiled(*self.row_source(), "row", f"<rows of {self.table.name}>")
        return self._row

    def rows(self, source: Mapping[str, Any], position: int, into: defaultdict[Table, list[dict[str, Any]]],
             map_key: Any = None, fixed: Mapping[str, Any] | None = None) -> None:
        """Appends the rows of one top-level JSON record (its own, then its children's) to ``into``, per table;
        ``fixed``: column values the JSON does not hold (a :class:`One`'s id)."""
        try:
            row = self.row_builder()(source, position)
        except (ValueError, TypeError) as exc:
            raise self._failed_check(source, exc) from None
        if self.key is not None and map_key is not None:
            if self._names_key and row[self.key] != map_key:
                raise _filed_elsewhere(f"{self.table.name}.{map_key}", self.key, row[self.key])
            row[self.key] = map_key
        if fixed:
            row.update(fixed)
        into[self.table].append(row)
        if self._collections:
            self._children_rows(source, row, into)

    def _children_rows(self, source: Mapping[str, Any], row: dict[str, Any],
                       into: defaultdict[Table, list[dict[str, Any]]]) -> None:
        own = self.own_key()
        for json_key, spec in self._collections:
            value = source.get(json_key)
            if value is None:
                if isinstance(spec, Many) and spec.default is not None:
                    value = spec.default
                elif json_key not in source and spec.default_empty:
                    continue
                elif json_key in source:
                    raise ValueError(f"{self.table.name}.{json_key}: null where a collection is required")
                else:
                    raise KeyError(f"{json_key!r} missing from a JSON record")
            if isinstance(spec, Ids):
                parent = row[own]
                into[spec.table].extend({own: parent, POSITION: i, spec.column: v} for i, v in enumerate(value))
                continue
            child = spec.record
            link = (child.parent or own) if spec.linked else None
            parent = row[own] if link is not None else None
            key, out, check = child.key if spec.keyed else None, into[child.table], spec.keyed and child._names_key
            build = child.row_builder()
            if not isinstance(value, dict if spec.keyed else list):
                raise ValueError(f"{self.table.name}.{json_key}: expected {'an object' if spec.keyed else 'a list'}, "
                                 f"got {type(value).__name__}")
            for i, (k, v) in enumerate(value.items() if spec.keyed else ((None, v) for v in value)):
                try:
                    child_row = build(v, i)
                except (ValueError, TypeError) as exc:
                    raise child._failed_check(v, exc) from None
                if link is not None:
                    child_row[link] = parent
                if key is not None:
                    if check and child_row[key] != k:
                        raise _filed_elsewhere(f"{self.table.name}.{json_key}.{k}", key, child_row[key])
                    child_row[key] = k
                out.append(child_row)
                if child._collections:
                    child._children_rows(v, child_row, into)


def insert_rows(conn: Connection, tables: Iterable[tuple[Table, Sequence[Mapping[str, Any]] | None]]) -> None:
    """Writes each table's rows, in the order given, skipping a table with none (SQLAlchemy would insert one row of
    defaults for an empty list): how a loader or a world generator fills its tables."""
    for table, rows in tables:
        if rows:
            conn.execute(insert(table), rows)


def _filed_elsewhere(where: str, key: str, given: Any) -> ValueError:
    """A record in a JSON map that names, in its own ``key`` field, a key other than the one it is filed under."""
    return ValueError(f"{where}: its {key} is {given!r}, not the key it is filed under")


@dataclass
class Database:
    """A domain's whole JSON database: its top-level collections (JSON key -> :class:`Many`, or :class:`One`
    for an object that is one row), in tau2's order. ``strict``: a top-level key it does not declare fails the
    load."""

    collections: Mapping[str, Many | One]
    strict: bool = False
    _all: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def load(self, conn: Connection, db: Mapping[str, Any]) -> None:
        """Fills the declared (empty) tables from ``db``, the parsed JSON; parents are inserted first.

        Raises ``KeyError`` naming a required key the JSON leaves out, and ``ValueError`` saying where a value
        fails its check (``conn`` is the image's one build transaction: a failed load leaves no image)."""
        into: defaultdict[Table, list[dict[str, Any]]] = defaultdict(list)
        if self.strict:
            _checked(db, frozenset(self.collections), "the database")
        for json_key, spec in self.collections.items():
            if isinstance(spec, One):
                value = db.get(json_key)
                if value is None:
                    if spec.default is None:
                        raise KeyError(f"{json_key!r} missing from the database")
                    value = spec.default
                spec.record.rows(value, 0, into, fixed=spec.fixed)
                continue
            if json_key not in db:
                if not spec.default_empty:
                    raise KeyError(f"{json_key!r} missing from the database")
                continue
            value = db[json_key]
            items = value.items() if spec.keyed else ((None, v) for v in value)
            for i, (k, v) in enumerate(items):
                spec.record.rows(v, i, into, k)
        sorted_tables = next(iter(into)).metadata.sorted_tables if into else ()  # parents before children
        insert_rows(conn, ((table, into.get(table)) for table in sorted_tables))

    def export(self, world: World) -> dict[str, Any]:
        """Every collection read back from ``world``, in the shape ``load`` takes (child tables are read whole,
        once each: an export costs a query per table, not per record)."""
        out: dict[str, Any] = {}
        bulk = _Bulk(world)
        for json_key, spec in self.collections.items():
            stmt = self._all.get(json_key)
            if stmt is None:
                table = spec.record.table
                stmt = self._all[json_key] = (select(table) if isinstance(spec, One)
                                              else select(table).order_by(table.c[POSITION]))
            rows = world.fetch_all(stmt)
            record, read = spec.record, spec.record.bulk_reader()
            if isinstance(spec, One):
                assert len(rows) == 1, f"{record.table.name} holds {len(rows)} rows, not one"
                out[json_key] = read(bulk, rows[0])
                continue
            if spec.keyed:
                assert record.key is not None, f"a keyed collection of {record.table.name} needs a key"
                out[json_key] = {r[record.key]: read(bulk, r) for r in rows}
            else:
                out[json_key] = [read(bulk, r) for r in rows]
        return out
