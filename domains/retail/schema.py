"""The retail world's tables: everything a tau2 retail database holds, normalized.

Lists and maps that tau2 keeps inside a record (an item's options, an exchange's item ids, a fulfillment's
tracking ids) are stored as JSON text: they are read and written whole, and their order is part of what
the agent sees. ``position`` columns keep the order of tau2's JSON collections, which decides the order
of look-ups (the first user matching a name and zip) and of tool output.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, MetaData
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    metadata = MetaData()


class User(Base):
    __tablename__ = "users"

    user_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int] = mapped_column(index=True)
    first_name: Mapped[str]
    last_name: Mapped[str]
    address1: Mapped[str]
    address2: Mapped[str]
    city: Mapped[str]
    country: Mapped[str]
    state: Mapped[str]
    zip: Mapped[str] = mapped_column(index=True)
    email: Mapped[str] = mapped_column(index=True)


class PaymentMethod(Base):
    """A user's credit card, PayPal account or gift card (``source``)."""

    __tablename__ = "payment_methods"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.user_id"), primary_key=True)
    method_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    source: Mapped[str]  # credit_card | paypal | gift_card
    brand: Mapped[str | None]  # credit cards
    last_four: Mapped[str | None]  # credit cards
    balance: Mapped[float | None]  # gift cards


class UserOrder(Base):
    """The ordered list of order ids on a user's profile."""

    __tablename__ = "user_orders"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.user_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    order_id: Mapped[str]


class Product(Base):
    __tablename__ = "products"

    product_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    name: Mapped[str]


class Variant(Base):
    """One purchasable item of a product: its options, availability and price."""

    __tablename__ = "variants"

    item_id: Mapped[str] = mapped_column(primary_key=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.product_id"), index=True)
    position: Mapped[int]
    options: Mapped[str]  # JSON object, key order kept
    available: Mapped[bool]
    price: Mapped[float]


class Order(Base):
    __tablename__ = "orders"

    order_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    user_id: Mapped[str] = mapped_column(ForeignKey("users.user_id"), index=True)
    address1: Mapped[str]
    address2: Mapped[str]
    city: Mapped[str]
    country: Mapped[str]
    state: Mapped[str]
    zip: Mapped[str]
    status: Mapped[str]
    cancel_reason: Mapped[str | None]
    exchange_items: Mapped[str | None]  # JSON list
    exchange_new_items: Mapped[str | None]  # JSON list
    exchange_payment_method_id: Mapped[str | None]
    exchange_price_difference: Mapped[float | None]
    return_items: Mapped[str | None]  # JSON list
    return_payment_method_id: Mapped[str | None]


class OrderItem(Base):
    __tablename__ = "order_items"

    order_id: Mapped[str] = mapped_column(ForeignKey("orders.order_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    product_id: Mapped[str]
    item_id: Mapped[str]
    price: Mapped[float]
    options: Mapped[str]  # JSON object


class Fulfillment(Base):
    __tablename__ = "fulfillments"

    order_id: Mapped[str] = mapped_column(ForeignKey("orders.order_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    tracking_ids: Mapped[str]  # JSON list
    item_ids: Mapped[str]  # JSON list


class Payment(Base):
    """One entry of an order's payment history."""

    __tablename__ = "payments"

    order_id: Mapped[str] = mapped_column(ForeignKey("orders.order_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    transaction_type: Mapped[str]  # payment | refund
    amount: Mapped[float]
    payment_method_id: Mapped[str]


users = User.__table__
payment_methods = PaymentMethod.__table__
user_orders = UserOrder.__table__
products = Product.__table__
variants = Variant.__table__
orders = Order.__table__
order_items = OrderItem.__table__
fulfillments = Fulfillment.__table__
payments = Payment.__table__
