"""The airline world's tables: everything a tau2 airline database holds, normalized.

``position`` columns keep the order of tau2's JSON collections (search results, tool output and the
export follow it). A flight's status on each date is one row of ``flight_dates``; which of its columns are
set depends on the status (seats and prices while ``available``; actual or estimated times otherwise).
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, MetaData
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    metadata = MetaData()


class Airport(Base):
    __tablename__ = "airports"

    iata: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    city: Mapped[str]


class Flight(Base):
    __tablename__ = "flights"

    flight_number: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    origin: Mapped[str] = mapped_column(index=True)
    destination: Mapped[str]
    scheduled_departure_time_est: Mapped[str]  # HH:MM:SS
    scheduled_arrival_time_est: Mapped[str]  # HH:MM:SS, "+1" for the next day


class FlightDate(Base):
    __tablename__ = "flight_dates"

    flight_number: Mapped[str] = mapped_column(ForeignKey("flights.flight_number"), primary_key=True)
    date: Mapped[str] = mapped_column(primary_key=True)  # YYYY-MM-DD
    position: Mapped[int]
    status: Mapped[str]  # available | on time | delayed | flying | landed | cancelled
    seats_basic_economy: Mapped[int | None]
    seats_economy: Mapped[int | None]
    seats_business: Mapped[int | None]
    price_basic_economy: Mapped[int | None]
    price_economy: Mapped[int | None]
    price_business: Mapped[int | None]
    actual_departure_time_est: Mapped[str | None]
    actual_arrival_time_est: Mapped[str | None]
    estimated_departure_time_est: Mapped[str | None]
    estimated_arrival_time_est: Mapped[str | None]


class User(Base):
    __tablename__ = "users"

    user_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    first_name: Mapped[str]
    last_name: Mapped[str]
    address1: Mapped[str]
    address2: Mapped[str | None]
    city: Mapped[str]
    country: Mapped[str]
    state: Mapped[str]
    zip: Mapped[str]
    email: Mapped[str]
    dob: Mapped[str]
    membership: Mapped[str]  # gold | silver | regular


class PaymentMethod(Base):
    """A user's credit card, gift card (``amount`` = balance) or travel certificate (``amount``)."""

    __tablename__ = "payment_methods"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.user_id"), primary_key=True)
    method_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    source: Mapped[str]  # credit_card | gift_card | certificate
    brand: Mapped[str | None]
    last_four: Mapped[str | None]
    amount: Mapped[float | None]


class SavedPassenger(Base):
    __tablename__ = "saved_passengers"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.user_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    first_name: Mapped[str]
    last_name: Mapped[str]
    dob: Mapped[str]


class UserReservation(Base):
    """The ordered list of reservation ids on a user's profile."""

    __tablename__ = "user_reservations"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.user_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    reservation_id: Mapped[str]


class Reservation(Base):
    __tablename__ = "reservations"

    reservation_id: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]
    user_id: Mapped[str] = mapped_column(ForeignKey("users.user_id"), index=True)
    origin: Mapped[str]
    destination: Mapped[str]
    flight_type: Mapped[str]  # one_way | round_trip
    cabin: Mapped[str]  # basic_economy | economy | business
    created_at: Mapped[str]
    total_baggages: Mapped[int]
    nonfree_baggages: Mapped[int]
    insurance: Mapped[str]  # yes | no
    status: Mapped[str | None]  # None | cancelled


class ReservationFlight(Base):
    __tablename__ = "reservation_flights"

    reservation_id: Mapped[str] = mapped_column(ForeignKey("reservations.reservation_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    flight_number: Mapped[str]
    origin: Mapped[str]
    destination: Mapped[str]
    date: Mapped[str]
    price: Mapped[int]


class ReservationPassenger(Base):
    __tablename__ = "reservation_passengers"

    reservation_id: Mapped[str] = mapped_column(ForeignKey("reservations.reservation_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    first_name: Mapped[str]
    last_name: Mapped[str]
    dob: Mapped[str]


class ReservationPayment(Base):
    """One entry of a reservation's payment history (refunds are negative)."""

    __tablename__ = "reservation_payments"

    reservation_id: Mapped[str] = mapped_column(ForeignKey("reservations.reservation_id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    payment_id: Mapped[str]
    amount: Mapped[int]


airports = Airport.__table__
flights = Flight.__table__
flight_dates = FlightDate.__table__
users = User.__table__
payment_methods = PaymentMethod.__table__
saved_passengers = SavedPassenger.__table__
user_reservations = UserReservation.__table__
reservations = Reservation.__table__
reservation_flights = ReservationFlight.__table__
reservation_passengers = ReservationPassenger.__table__
reservation_payments = ReservationPayment.__table__
