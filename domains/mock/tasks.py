"""The mock shop's tasks: a dozen hand-written conversations over the default world (seed 0)."""

from __future__ import annotations

from typing import Any

from mua_gym.task import Action, EvaluationSpec, Task, UserScenario

YES = "Yes, that's right. Please go ahead."


def _a(name: str, compare: list[str] | None = None, **arguments: Any) -> Action:
    return Action(name=name, arguments=arguments, compare_args=compare)


def _task(id: str, split: str, category: str, opening: str, gold: list[Action], basis: list[str],
          communicate: list[str] | None = None, reply: str = YES, facts: dict[str, Any] | None = None,
          expect: list[Action] | None = None) -> Task:
    return Task(
        id=f"mock-{id}", domain="mock", split=split, category=category,
        description=f"{category}: {opening}",
        user_scenario=UserScenario(instructions=opening, facts=facts or {}),
        script=[opening, reply],
        gold_actions=gold,
        evaluation=EvaluationSpec(reward_basis=basis, communicate_info=communicate or [], actions=expect or []),
    )


def _who(email: str) -> Action:
    return _a("find_customer_by_email", email=email)


TASKS = [
    _task("cancel-card", "train", "cancel",
          "Hi, I'm Ana (ana@example.com). Please cancel my order O1001, I no longer need it.",
          [_who("ana@example.com"), _a("get_order", order_id="O1001"),
           _a("cancel_order", order_id="O1001", reason="no longer needed")], ["DB"]),
    _task("cancel-gift", "train", "cancel",
          "Hello, this is Ben, ben@example.com. I ordered O1003 by mistake, can you cancel it?",
          [_who("ben@example.com"), _a("get_order", order_id="O1003"),
           _a("cancel_order", order_id="O1003", reason="ordered by mistake")], ["DB"]),
    _task("update-email", "train", "profile",
          "Hi, Chen here (chen@example.com). Please change my email to chen.wei@example.net.",
          [_who("chen@example.com"), _a("update_email", customer_id="C003", email="chen.wei@example.net")], ["DB"]),
    _task("place-order", "train", "order",
          "Hi, I'm Ana, ana@example.com. I'd like to order two Pour-over kettles (P02), paid by card.",
          [_who("ana@example.com"), _a("list_products"),
           _a("place_order", customer_id="C001", items=[{"product_id": "P02", "quantity": 2}], payment="card")],
          ["DB"]),
    _task("return-gift", "train", "return",
          "Hi, Ben (ben@example.com). I want to return my delivered order O1004.",
          [_who("ben@example.com"), _a("get_order", order_id="O1004"), _a("return_order", order_id="O1004")],
          ["DB"]),
    _task("order-total", "train", "information",
          "Hi, I'm Chen, chen@example.com. What was the total of my order O1005?",
          [_who("chen@example.com"), _a("get_order", order_id="O1005")], ["DB", "COMMUNICATE"],
          communicate=["58.98"], reply="Thanks, that's all I needed."),
    _task("multi-intent", "train", "multi",
          "Hi, Ana here, ana@example.com. Two things: change my email to ana.lopez@example.net, and cancel "
          "order O1002, I ordered it by mistake.",
          [_who("ana@example.com"), _a("update_email", customer_id="C001", email="ana.lopez@example.net"),
           _a("get_order", order_id="O1002"), _a("cancel_order", order_id="O1002", reason="ordered by mistake")],
          ["DB"]),
    _task("refuse-cancel-shipped", "dev", "refusal",
          "Hi, I'm Dina (dina@example.com). Cancel my order O1006 right now please. If you can't, tell me its status.",
          [_who("dina@example.com"), _a("get_order", order_id="O1006")], ["DB", "ACTION", "COMMUNICATE"],
          communicate=["shipped"], reply="Oh. Fine, I'll wait for it then."),
    _task("stock-question", "dev", "information",
          "Hello, I'm Chen (chen@example.com). How many burr grinders (P03) do you have in stock, and at what price?",
          [_who("chen@example.com"), _a("list_products")], ["DB", "COMMUNICATE"],
          communicate=["89.0"], reply="Great, thank you."),
    _task("transfer-bank-refund", "test", "transfer",
          "Hi, Ben here, ben@example.com. I want the refund for O1004 sent to my bank account. If you can't do that, "
          "tell me how I paid for it, and get me a human.",
          [_who("ben@example.com"), _a("get_order", order_id="O1004"),
           _a("transfer_to_human_agents", [], summary="Customer wants the refund for O1004 paid to a bank account.")],
          ["DB", "ACTION", "COMMUNICATE"], communicate=["gift_card"],
          expect=[_a("transfer_to_human_agents", [], summary="")]),
    _task("place-order-gift", "test", "order",
          "Hi, Dina, dina@example.com. Please order one pack of paper filters (P04) and one espresso cup (P01), "
          "paid with my gift card.",
          [_who("dina@example.com"), _a("list_products"),
           _a("place_order", customer_id="C004",
              items=[{"product_id": "P04", "quantity": 1}, {"product_id": "P01", "quantity": 1}],
              payment="gift_card")], ["DB"]),
    _task("combined-total", "test", "information",
          "Hi, I'm Ana (ana@example.com). What do my orders O1001 and O1002 come to together?",
          [_who("ana@example.com"), _a("get_order", order_id="O1001"), _a("get_order", order_id="O1002"),
           _a("calculate", expression="19.0 + 22.25")], ["DB", "COMMUNICATE"],
          communicate=["41.25"], reply="Perfect, thanks."),
    _task("refuse-out-of-stock", "test", "refusal",
          "Hi, Chen (chen@example.com). Please order me one travel mug (P05), by card. If you can't, tell me how many "
          "you have in stock.",
          [_who("chen@example.com"), _a("list_products")], ["DB", "ACTION", "COMMUNICATE"], communicate=["0"],
          reply="Too bad. Thanks anyway."),
]


def mock_tasks(domain: Any, split: str) -> list[Task]:
    return [t.model_copy(deep=True) for t in TASKS if t.split == split]
