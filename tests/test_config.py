import pytest

from ragcli.config import Settings
from ragcli.errors import UsageError


def test_precedence_flag_over_env_over_file_over_default(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("theta = 0.3\nk = 7\nbeta = 0.1\n")
    env = {"RAGCLI_THETA": "0.6", "RAGCLI_K": "4"}
    s = Settings.resolve({"theta": 0.9}, env=env, config_path=cfg)
    assert s.theta == 0.9 and s.source("theta") == "flag"
    assert s.k == 4 and s.source("k") == "env RAGCLI_K"
    assert s.beta == 0.1 and s.source("beta").startswith("config")
    assert s.lookahead == 64 and s.source("lookahead") == "default"


def test_bad_values_are_usage_errors(tmp_path):
    with pytest.raises(UsageError):
        Settings.resolve({}, env={"RAGCLI_K": "many"}, config_path=tmp_path / "x.toml")
    with pytest.raises(UsageError):
        Settings().set("no_such_setting", 1)
    bad = tmp_path / "bad.toml"
    bad.write_text("theta = [")
    with pytest.raises(UsageError):
        Settings.resolve({}, env={}, config_path=bad)


def test_bool_coercion():
    s = Settings(index=".")
    s.set("cache", "off")
    assert s.cache is False
    s.set("web", "yes")
    assert s.web is True


@pytest.mark.parametrize("name, value, says", [
    ("theta", 7, "between 0 and 1"), ("beta", -0.1, "between 0 and 1"), ("theta", "nan", "between 0 and 1"),
    ("k", 0, "at least 1"), ("temperature", -1, "at least 0"), ("ctx", 16, "at least 256"),
])
def test_numbers_out_of_range_are_refused_with_the_range(name, value, says):
    with pytest.raises(UsageError, match=says):
        Settings(index=".").set(name, value)


def test_numbers_at_the_bounds_are_accepted_and_every_default_is_in_range():
    from ragcli.config import RANGES

    from ragcli.config import AUTO

    s = Settings(index=".")
    for name, (low, high) in RANGES.items():
        value = getattr(s, name)
        assert (name in AUTO and value == "auto") or low <= value <= high, name
    s.set("theta", 1)
    s.set("theta", 0)
    s.set("highlight", -1)
    s.set("n_gpu_layers", -1)
    assert (s.theta, s.highlight, s.n_gpu_layers) == (0.0, -1.0, -1)


def test_a_bad_value_from_env_or_config_says_where_it_came_from(tmp_path):
    with pytest.raises(UsageError, match="from the environment variable RAGCLI_THETA"):
        Settings.resolve({}, env={"RAGCLI_THETA": "7"}, config_path=tmp_path / "none.toml")
    cfg = tmp_path / "c.toml"
    cfg.write_text("k = 0\n")
    with pytest.raises(UsageError, match=f"from the config file {cfg}"):
        Settings.resolve({}, env={}, config_path=cfg)


def test_thresholds_take_auto_or_a_number_in_range():
    s = Settings(index=".")
    for name in ("theta", "tau"):
        s.set(name, "AUTO")
        assert getattr(s, name) == "auto"
    s.set("tau", "2.5")
    assert s.tau == 2.5
    with pytest.raises(UsageError, match="expects a number or 'auto'"):
        s.set("theta", "often")
    with pytest.raises(UsageError, match="between 0 and 1"):
        s.set("theta", "1.5")
    with pytest.raises(UsageError, match="at least 0"):
        s.set("tau", "-1")
    assert s.copy(theta="auto").highlight_threshold == 0.4  # until the calibrated value arrives
