"""`Frames`, the crawl process's socket protocol, over a real socket pair."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import pytest

from ledger.drivers.crawl_child import Frames, frame


async def pair() -> tuple[Frames, Frames]:
    ours, theirs = socket.socketpair()
    loop = asyncio.get_running_loop()
    _, near = await loop.create_connection(Frames, sock=ours)
    _, far = await loop.create_connection(Frames, sock=theirs)
    return near, far


async def closed(*ends: Frames) -> None:
    for end in ends:
        end.close()
    await asyncio.wait_for(asyncio.gather(*(end.closed for end in ends)), 5)


async def received(frames: Frames, count: int) -> list[Any]:
    messages: list[Any] = []
    done = asyncio.get_running_loop().create_future()

    def hear(message: Any) -> None:
        messages.append(message)
        if len(messages) == count and not done.done():
            done.set_result(None)

    frames.listen(hear)
    await asyncio.wait_for(done, 5)
    return messages


def test_messages_of_one_loop_turn_arrive_in_order_and_whole() -> None:
    async def scenario() -> list[Any]:
        near, far = await pair()
        big = "x" * 300_000  # more than one read's worth
        for n in range(50):
            near.send(("crawl", n, big if n == 25 else n))
        messages = await received(far, 50)
        await closed(near, far)
        return messages

    messages = asyncio.run(scenario())
    assert [m[1] for m in messages] == list(range(50))
    assert messages[25][2] == "x" * 300_000 and messages[24][2] == 24


def test_a_frame_split_across_reads_is_read_once_whole() -> None:
    async def scenario() -> list[Any]:
        ours, theirs = socket.socketpair()
        _, far = await asyncio.get_running_loop().create_connection(Frames, sock=theirs)
        data = frame(("ok", 1, "first")) + frame(("ok", 2, "second"))
        for at in range(0, len(data), 7):  # 7 bytes at a time, headers split too
            ours.send(data[at:at + 7])
            await asyncio.sleep(0)
        messages = await received(far, 2)
        ours.close()
        await closed(far)
        return messages

    assert asyncio.run(scenario()) == [("ok", 1, "first"), ("ok", 2, "second")]


def test_messages_before_anyone_listens_are_kept_for_the_listener() -> None:
    async def scenario() -> tuple[Any, list[Any]]:
        near, far = await pair()
        near.send(("start", 0))
        near.send(("crawl", 1))
        await asyncio.sleep(0.05)  # both have arrived, nobody listening
        first = await far.first()
        rest = await received(far, 1)
        await closed(near, far)
        return first, rest

    assert asyncio.run(scenario()) == (("start", 0), [("crawl", 1)])


def test_first_is_none_when_the_other_end_closes() -> None:
    async def scenario() -> Any:
        near, far = await pair()
        near.close()
        first = await asyncio.wait_for(far.first(), 5)
        await closed(near, far)
        return first

    assert asyncio.run(scenario()) is None


def test_a_message_sent_from_another_thread_leaves_on_the_loop() -> None:
    async def scenario() -> list[Any]:
        near, far = await pair()
        sender = threading.Thread(target=near.send, args=(("pool", 0, ["proxy"]),))
        sender.start()
        messages = await received(far, 1)
        sender.join()
        await closed(near, far)
        return messages

    assert asyncio.run(scenario()) == [("pool", 0, ["proxy"])]


def test_an_unpicklable_message_raises_to_the_sender_and_sends_nothing() -> None:
    async def scenario() -> list[Any]:
        near, far = await pair()
        with pytest.raises(Exception):  # noqa: B017 - pickle's own error type varies
            near.send(("ok", 1, lambda: None))
        near.send(("ok", 2, "after"))
        messages = await received(far, 1)
        await closed(near, far)
        return messages

    assert asyncio.run(scenario()) == [("ok", 2, "after")]
