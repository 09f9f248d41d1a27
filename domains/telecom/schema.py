"""The telecom world: the carrier's account side and the customer's phone, in one SQL database.

Account side (the agent's tools act here): plans, customers (with their payment methods, line and bill
lists), lines, bills (with line items), devices. Phone side (the user's tools act here): one row of
``phone`` (SIM, radios, APN, Wi-Fi, VPN, the connection it last found), the phone's apps and their
permissions, and one row of ``surroundings`` (where the phone is and what the network allows it).
Dates and datetimes are stored as the text tau2 renders them ("2025-02-25", "2025-01-15 10:30:00").
``position`` columns keep the order of tau2's lists.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, MetaData, literal_column
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    metadata = MetaData()


# -- account side ---------------------------------------------------------------------------------------
class Plan(Base):
    __tablename__ = "plans"

    plan_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    name: Mapped[str]
    data_limit_gb: Mapped[float]
    price_per_month: Mapped[float]
    data_refueling_price_per_gb: Mapped[float]


class Device(Base):
    __tablename__ = "devices"

    device_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    device_type: Mapped[str]  # phone | router | tablet | watch | other
    model: Mapped[str]
    imei: Mapped[str | None]
    is_esim_capable: Mapped[bool]
    activated: Mapped[bool]
    activation_date: Mapped[str | None]
    last_esim_transfer_date: Mapped[str | None]


class Line(Base):
    __tablename__ = "lines"

    line_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    phone_number: Mapped[str] = mapped_column(index=True)
    status: Mapped[str]  # Active | Suspended | Pending Activation | Closed
    plan_id: Mapped[str]
    device_id: Mapped[str | None]
    data_used_gb: Mapped[float]
    data_refueling_gb: Mapped[float]
    roaming_enabled: Mapped[bool]
    contract_end_date: Mapped[str | None]
    last_plan_change_date: Mapped[str | None]
    last_sim_replacement_date: Mapped[str | None]
    suspension_start_date: Mapped[str | None]


class Customer(Base):
    __tablename__ = "customers"

    customer_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    full_name: Mapped[str]
    date_of_birth: Mapped[str]
    email: Mapped[str]
    phone_number: Mapped[str]
    street: Mapped[str]
    city: Mapped[str]
    state: Mapped[str]
    zip_code: Mapped[str]
    account_status: Mapped[str]  # Active | Suspended | Pending Verification | Closed
    created_at: Mapped[str]
    last_extension_date: Mapped[str | None]
    goodwill_credit_used_this_year: Mapped[float]


class CustomerPaymentMethod(Base):
    __tablename__ = "customer_payment_methods"

    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.customer_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    method_type: Mapped[str]  # Credit Card | Debit Card | PayPal
    account_number_last_4: Mapped[str]
    expiration_date: Mapped[str]


class CustomerLine(Base):
    __tablename__ = "customer_lines"

    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.customer_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    line_id: Mapped[str]


class CustomerBill(Base):
    __tablename__ = "customer_bills"

    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.customer_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    bill_id: Mapped[str]


class Bill(Base):
    __tablename__ = "bills"

    bill_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    customer_id: Mapped[str]
    period_start: Mapped[str]
    period_end: Mapped[str]
    issue_date: Mapped[str]
    total_due: Mapped[float]
    due_date: Mapped[str]
    status: Mapped[str]  # Draft | Issued | Awaiting Payment | Paid | Overdue | Disputed


class BillLineItem(Base):
    __tablename__ = "bill_line_items"

    bill_id: Mapped[str] = mapped_column(ForeignKey("bills.bill_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    description: Mapped[str]
    amount: Mapped[float]
    date: Mapped[str]
    item_type: Mapped[str]


# -- phone side ------------------------------------------------------------------------------------------
class Phone(Base):
    """The customer's phone (one row, id 1): its settings and the connection it last found."""

    __tablename__ = "phone"

    id: Mapped[int] = mapped_column(primary_key=True)
    sim_card_status: Mapped[str]  # active | missing | locked_pin | locked_puk
    sim_card_missing: Mapped[bool]
    airplane_mode: Mapped[bool]
    network_signal_strength: Mapped[str]  # none | poor | fair | good | excellent
    network_technology_connected: Mapped[str]  # none | 2G | 3G | 4G | 5G
    network_connection_status: Mapped[str]  # connected | searching | no_service | emergency_only
    battery_level: Mapped[int]
    data_enabled: Mapped[bool]
    roaming_enabled: Mapped[bool]
    network_mode_preference: Mapped[str]  # 4g_5g_preferred | 4g_only | 3g_only | 2g_only
    apn_name: Mapped[str]  # internet | broken
    apn_reset_at_reboot: Mapped[bool]
    mms_apn: Mapped[str | None]
    mmsc_url: Mapped[str | None]
    mms_proxy: Mapped[str | None]
    mms_port: Mapped[int | None]
    wifi_enabled: Mapped[bool]
    wifi_connected: Mapped[bool]
    wifi_ssid: Mapped[str | None]
    wifi_signal_strength: Mapped[str]
    wifi_calling_enabled: Mapped[bool]
    wifi_calling_mms_over_wifi: Mapped[bool]
    data_saver_mode: Mapped[bool]
    vpn_enabled_setting: Mapped[bool]
    vpn_connected: Mapped[bool]
    has_vpn_details: Mapped[bool]
    vpn_server_address: Mapped[str | None]
    vpn_protocol: Mapped[str | None]
    vpn_server_performance: Mapped[str | None]  # unknown | poor | fair | good | excellent


class PhoneApp(Base):
    __tablename__ = "phone_apps"

    app_name: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    perm_sms: Mapped[bool]
    perm_storage: Mapped[bool]
    perm_phone: Mapped[bool]
    perm_network: Mapped[bool]


class Surroundings(Base):
    """Where the phone is and what the network allows it (one row, id 1)."""

    __tablename__ = "surroundings"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str | None]
    phone_number: Mapped[str | None]
    is_abroad: Mapped[bool]
    roaming_allowed: Mapped[bool]
    signal_2g: Mapped[str]
    signal_3g: Mapped[str]
    signal_4g: Mapped[str]
    signal_5g: Mapped[str]
    mobile_data_usage_exceeded: Mapped[bool]
    line_active: Mapped[bool]
    payment_bill_id: Mapped[str | None]
    payment_amount_due: Mapped[float | None]
    payment_paid: Mapped[bool | None]


# For RETURNING clauses that hand a written row to World.execute_and_keep (rowid first).
ROWID = literal_column("rowid")

plans = Plan.__table__
devices = Device.__table__
lines = Line.__table__
customers = Customer.__table__
customer_payment_methods = CustomerPaymentMethod.__table__
customer_lines = CustomerLine.__table__
customer_bills = CustomerBill.__table__
bills = Bill.__table__
bill_line_items = BillLineItem.__table__
phone = Phone.__table__
phone_apps = PhoneApp.__table__
surroundings = Surroundings.__table__
