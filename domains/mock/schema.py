"""The mock shop's tables."""

from __future__ import annotations

from sqlalchemy import ForeignKey, MetaData
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    metadata = MetaData()


class Customer(Base):
    __tablename__ = "customers"

    customer_id: Mapped[str] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str] = mapped_column(unique=True)
    zip: Mapped[str]
    gift_balance: Mapped[float]
    # Bookkeeping that no task is about: excluded from world hashes and diffs.
    last_contact: Mapped[int] = mapped_column(default=0, info={"volatile": True})


class Product(Base):
    __tablename__ = "products"

    product_id: Mapped[str] = mapped_column(primary_key=True)
    name: Mapped[str]
    price: Mapped[float]
    stock: Mapped[int]


class Order(Base):
    __tablename__ = "orders"

    order_id: Mapped[str] = mapped_column(primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.customer_id"), index=True)
    status: Mapped[str]  # pending | shipped | delivered | cancelled | returned
    payment: Mapped[str]  # card | gift_card
    total: Mapped[float]
    cancel_reason: Mapped[str | None] = mapped_column(default=None)


class OrderLine(Base):
    __tablename__ = "order_lines"

    order_id: Mapped[str] = mapped_column(ForeignKey("orders.order_id"), primary_key=True)
    line: Mapped[int] = mapped_column(primary_key=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.product_id"))
    quantity: Mapped[int]
    unit_price: Mapped[float]


class Device(Base):
    """The customer's own phone: only the user's tools touch it."""

    __tablename__ = "devices"

    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.customer_id"), primary_key=True)
    notifications: Mapped[bool]


class Counter(Base):
    """Sequences for new ids, kept in the world so that replays give the same ids."""

    __tablename__ = "counters"

    name: Mapped[str] = mapped_column(primary_key=True)
    value: Mapped[int]


customers = Customer.__table__
products = Product.__table__
orders = Order.__table__
order_lines = OrderLine.__table__
devices = Device.__table__
counters = Counter.__table__
