"""Step an episode by hand: you play the agent, the scripted user plays the customer."""

import mua_gym

env = mua_gym.make("mua/Mock-v0", render_mode="ansi")
observation, info = env.reset(options={"task_id": "mock-cancel-card"})
print(observation[-1]["content"])  # the customer's opening message

steps = [
    {"name": "find_customer_by_email", "arguments": {"email": "ana@example.com"}},
    '<tool_call>{"name": "get_order", "arguments": {"order_id": "O1001"}}</tool_call>',  # raw model text works too
    "I can cancel order O1001 (reason: no longer needed). Shall I go ahead?",
    {"name": "cancel_order", "arguments": {"order_id": "O1001", "reason": "no longer needed"}},
    "Done: O1001 is cancelled. Anything else?",
]
for action in steps:
    observation, reward, terminated, truncated, info = env.step(action)
    print(observation[-1]["content"][:100])
print(env.render())
print("reward:", reward, "| diff vs gold:", info["reward_info"]["db_diff"])
