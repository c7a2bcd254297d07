"""backends.kineto against synthetic torch events, known answers: a runtime's host-typed activity told apart by its
Kineto activity type and its time given back to the op it ran in; device time torch's profiler stubs put on host
ops (legacy kernels named as the op) told from correlated device kernels, nested stubs counted once."""

from __future__ import annotations

from types import SimpleNamespace

from torch.autograd import DeviceType

from neuronexp.backends.kineto import correlated_us, host_device_time, row_key, runtime_rows, stub_us

APART = ("privateuse1_runtime", "privateuse1_driver")


def _evt(
    name: str, cpu: float = 10.0, kernels: tuple = (), legacy: bool = False, activity: str = "cpu_op", parent=None
):
    evt = SimpleNamespace(
        name=name,
        key=name,
        device_type=DeviceType.CPU,
        is_async=False,
        is_legacy=legacy,
        is_user_annotation=False,
        input_shapes=[],
        activity_type=activity,
        cpu_time_total=cpu,
        cpu_children=[],
        kernels=[SimpleNamespace(name=k, duration=us) for k, us in kernels],
    )
    if parent is not None:
        parent.cpu_children.append(evt)
    return evt


def test_runtime_activity_is_set_apart_and_its_time_given_back_to_its_op() -> None:
    mul = _evt("aten::mul", cpu=10.0)
    call = _evt("NeuronRuntime::execute", cpu=4.0, activity="privateuse1_runtime", parent=mul)
    driver = _evt("driver::submit", cpu=1.0, activity="privateuse1_driver")
    found = runtime_rows([mul, call, driver], APART, by_shapes=False)
    assert found.keys == {row_key(call, False), row_key(driver, False)}
    assert found.nested_us == {row_key(mul, False): 4.0}
    assert runtime_rows([mul, call], (), by_shapes=False).keys == set()  # a backend without such activities


def test_stub_time_on_host_rows_is_told_from_correlated_kernels_and_counted_once_when_nested() -> None:
    # aten::linear's stub spans its child aten::addmm's; addmm also has a correlated kernel of 7 us.
    linear = _evt("aten::linear", kernels=(("aten::linear", 50.0),), legacy=True)
    addmm = _evt("aten::addmm", kernels=(("aten::addmm", 40.0), ("gemm", 7.0)), legacy=True, parent=linear)
    relu = _evt("aten::relu", kernels=(("aten::relu", 5.0),), legacy=True)
    plain = _evt("aten::view")
    events = [linear, addmm, relu, plain]
    assert (stub_us(addmm), stub_us(plain), stub_us(_evt("x", kernels=(("x", 3.0),)))) == (40.0, 0.0, 0.0)
    found = host_device_time(events, APART)
    assert found.per_op == {"aten::linear": 10.0, "aten::addmm": 40.0, "aten::relu": 5.0}
    assert (found.total_us, found.executions) == (55.0, 2)  # the outermost stubs; addmm and relu did the work
    assert correlated_us(events) == {"aten::addmm": 7.0}
