import os

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
    ("k", 0, "at least 1"), ("temperature", -1, "between 0 and 10"), ("ctx", 16, "at least 256"),
])
def test_numbers_out_of_range_are_refused_with_the_range(name, value, says):
    with pytest.raises(UsageError, match=says):
        Settings(index=".").set(name, value)


def test_numbers_at_the_bounds_are_accepted_and_every_default_is_in_range():
    from ragcli.config_values import RANGES

    from ragcli.config_values import AUTO

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


def test_a_strategy_is_checked_where_it_is_set_and_the_names_are_the_registrys(tmp_path):
    from ragcli.config_values import EVAL_ONLY_STRATEGIES, STRATEGY_NAMES
    from ragcli.strategies import EVAL_ONLY, STRATEGIES

    assert STRATEGY_NAMES == tuple(STRATEGIES) and EVAL_ONLY_STRATEGIES == tuple(EVAL_ONLY)
    cfg = tmp_path / "c.toml"
    cfg.write_text('strategy = "zz"\n')
    with pytest.raises(UsageError, match=f"must be one of flare, .*got 'zz' \\(from the config file {cfg}\\)"):
        Settings.resolve({}, env={}, config_path=cfg)
    with pytest.raises(UsageError, match="from the environment variable RAGCLI_STRATEGY"):
        Settings.resolve({}, env={"RAGCLI_STRATEGY": "zz"}, config_path=tmp_path / "none.toml")
    s = Settings(index=".")
    with pytest.raises(UsageError, match="got 'zz'"):  # the REPL's /set strategy zz
        s.set("strategy", "zz")
    s.set("strategy", "oracle")  # the eval's gold-paragraph run
    assert s.strategy == "oracle"


def test_a_path_setting_starting_with_a_tilde_is_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = tmp_path / "c.toml"
    cfg.write_text('index = "~/notes-index"\n')
    assert Settings.resolve({}, env={}, config_path=cfg).index == str(tmp_path / "notes-index")
    s = Settings.resolve({}, env={"RAGCLI_INDEX": "~/other", "RAGCLI_MODEL": "~/m.gguf"},
                         config_path=tmp_path / "none.toml")
    assert (s.index, s.model) == (str(tmp_path / "other"), str(tmp_path / "m.gguf"))


def test_a_config_file_that_cannot_be_read_is_a_usage_error(tmp_path, monkeypatch):
    from pathlib import Path

    cfg = tmp_path / "config.toml"
    cfg.write_text("k = 3\n")

    def denied(self, *args, **kwargs):  # chmod 000 as a user (tests may run as root, who reads anyway)
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(UsageError, match=f"cannot read the config file {cfg}: Permission denied"):
        Settings.resolve({}, env={}, config_path=cfg)


def test_a_config_file_a_windows_tool_wrote_is_read(tmp_path):
    """A config file saved by Notepad as "UTF-8 with BOM" was refused as "not valid TOML: Invalid
    statement (at line 1, column 1)", where nothing can be seen wrong, and one PowerShell 5 wrote
    (`echo "k = 7" > config.toml`: UTF-16) as "'utf-8' codec can't decode byte 0xff": read as the
    .ragcliignore beside a user's notes is, by its byte-order mark or the NUL bytes of UTF-16."""
    import codecs

    cfg = tmp_path / "config.toml"
    text = 'k = 7\r\nindex = "C:/Users/zoë/idx"\r\n'
    for raw in (codecs.BOM_UTF8 + text.encode(), codecs.BOM_UTF16_LE + text.encode("utf-16-le"),
                text.encode("utf-16-le")):
        cfg.write_bytes(raw)
        s = Settings.resolve({}, env={}, config_path=cfg)
        assert (s.k, s.index) == (7, "C:/Users/zoë/idx"), raw[:6]
    cfg.write_bytes("k = 7 # zoë\n".encode("latin-1"))  # TOML is UTF-8: a legacy file is still refused
    with pytest.raises(UsageError, match="is not valid TOML"):
        Settings.resolve({}, env={}, config_path=cfg)


def test_a_config_files_settings_at_the_top_and_in_a_settings_table_are_all_read(tmp_path, monkeypatch):
    """With a [settings] table, the keys at the top were dropped without a word; `settings = "fast"`
    was an internal error; RAGCLI_CONFIG naming a missing file or a folder was ignored."""
    cfg = tmp_path / "config.toml"
    cfg.write_text("k = 7\ntheta = 0.2\n\n[settings]\nmax_tokens = 50\n")
    s = Settings.resolve({}, env={}, config_path=cfg)
    assert (s.k, s.theta, s.max_tokens) == (7, 0.2, 50)
    for text, said in (('settings = "fast"\n', '"settings" must be a table'),
                       ("k = 7\n[settings]\nk = 8\n", "sets 'k' both at the top and in \\[settings\\]")):
        cfg.write_text(text)
        with pytest.raises(UsageError, match=said):
            Settings.resolve({}, env={}, config_path=cfg)
    for where, said in ((tmp_path / "no-such.toml", "which is not there"), (tmp_path, "which is a folder")):
        monkeypatch.setenv("RAGCLI_CONFIG", str(where))
        with pytest.raises(UsageError, match=f"^RAGCLI_CONFIG names {where}, {said}$"):
            Settings.resolve({}, env={})
    cfg.write_text("top-p = 0.5\n[settings]\ntop_p = 0.9\n")  # one setting, spelled two ways
    with pytest.raises(UsageError, match="sets 'top_p' both"):
        Settings.resolve({}, env={}, config_path=cfg)
    monkeypatch.setenv("HOME", str(tmp_path))  # "~/config.toml" from a .env file or a systemd unit
    cfg.write_text("k = 9\n")
    monkeypatch.setenv("RAGCLI_CONFIG", "~/config.toml")
    assert Settings.resolve({}, env={}).k == 9
    monkeypatch.setenv("RAGCLI_CONFIG", os.devnull)  # no config file at all (the benchmarks' own runs)
    assert Settings.resolve({}, env={}).source("k") == "default"


@pytest.mark.parametrize("line", ["k = true", "k = 2.9", "theta = false"])
def test_a_config_number_of_the_wrong_type_is_refused_not_truncated(tmp_path, line):
    cfg = tmp_path / "c.toml"
    cfg.write_text(line + "\n")
    with pytest.raises(UsageError, match="expects"):
        Settings.resolve({}, env={}, config_path=cfg)
    cfg.write_text("k = 3.0\n")  # a whole number written as a float is that number
    assert Settings.resolve({}, env={}, config_path=cfg).k == 3


def test_an_unknown_setting_lists_the_known_ones_as_show_and_the_flags_spell_them():
    """`/set nosuch 1` listed "n_gpu_layers" while `/show settings` prints "n-gpu-layers"."""
    with pytest.raises(UsageError) as exc:
        Settings().set("nosuch", "1")
    assert "n-gpu-layers" in exc.value.hint and "n_gpu_layers" not in exc.value.hint


def test_a_server_named_on_the_command_line_is_the_backend_or_a_clear_error():
    """`ask --base-url URL` without --backend openai answered with the local model, exit 0, no word."""
    from ragcli.errors import UsageError

    from pathlib import Path

    none = Path("/nonexistent")
    s = Settings.resolve({"base_url": "http://127.0.0.1:8080"}, env={}, config_path=none)
    assert s.backend == "openai" and s.source("backend") == "implied by --base-url"
    for flags, env, said in (({"api_model": "m"}, {}, "--api-model is for --backend openai, not llama$"),
                             ({"base_url": "http://x", "backend": "llama"}, {}, "not llama: --backend llama$"),
                             ({"base_url": "http://x"}, {"RAGCLI_BACKEND": "llama"}, "not llama: env RAGCLI_BACKEND$")):
        with pytest.raises(UsageError, match=said):
            Settings.resolve(flags, env=env, config_path=none)
    # set in the environment or a config file, a base URL names the server too (it went unused)
    s = Settings.resolve({}, env={"RAGCLI_BASE_URL": "http://x"}, config_path=none)
    assert s.backend == "openai" and s.source("backend") == "implied by base-url from env RAGCLI_BASE_URL"
    s = Settings.resolve({}, env={"RAGCLI_BASE_URL": "http://x", "RAGCLI_BACKEND": "llama"}, config_path=none)
    assert s.backend == "llama"  # chosen: the server stays a setting for when the backend is openai
    assert Settings.resolve({}, env={"RAGCLI_API_MODEL": "m"}, config_path=none).backend == "llama"


def test_the_in_process_models_settings_are_refused_with_the_server_backend():
    """`--model big.gguf --require-gpu` with a base URL from the environment answered from the server's
    model, exit 0, no word; the same settings from the environment or a config file stay quiet."""
    from pathlib import Path

    none = Path("/nonexistent")
    env = {"RAGCLI_BASE_URL": "http://x"}
    for flags, said in (({"model": "/m/big.gguf"}, "^--model is for --backend llama .* \\(implied by base-url from env"),
                        ({"require_gpu": True}, "^--require-gpu is for --backend llama"),
                        ({"n_gpu_layers": 99}, "^--n-gpu-layers is for"), ({"threads": 3}, "^--threads is for")):
        with pytest.raises(UsageError, match=said) as caught:
            Settings.resolve(flags, env=env, config_path=none)
        assert "RAGCLI_BASE_URL= clears the URL" in caught.value.hint
    with pytest.raises(UsageError, match="but the backend is openai \\(--backend openai\\)"):
        Settings.resolve({"backend": "openai", "base_url": "http://x", "model": "/m/a.gguf"}, env={}, config_path=none)
    # the defaults, a backend of llama, or the settings from the environment: nothing to refuse
    assert Settings.resolve({"require_gpu": False, "ctx": 4096}, env=env, config_path=none).backend == "openai"
    assert Settings.resolve({"model": "/m/a.gguf"}, env={**env, "RAGCLI_BACKEND": "llama"}, config_path=none).model
    assert Settings.resolve({}, env={**env, "RAGCLI_THREADS": "3"}, config_path=none).threads == 3
    s = Settings.resolve({}, env=env, config_path=none)  # the REPL's /set: refused as the flag is
    s.set("model", "/m/b.gguf")
    with pytest.raises(UsageError, match="^/set model is for --backend llama"):
        s.server_named(["model"], lambda n: "/set " + n)


def test_an_unknown_setting_names_the_one_it_was_likely_meant_to_be(tmp_path):
    """`thetta = 0.3` in the config file listed all 47 settings; the one meant is named."""
    from pathlib import Path

    config = tmp_path / "config.toml"
    config.write_text("thetta = 0.3\n")
    with pytest.raises(UsageError, match=f"^unknown setting 'thetta' \\(from the config file {config}\\)$") as caught:
        Settings.resolve({}, env={}, config_path=config)
    assert caught.value.hint == "did you mean 'theta'?"
    with pytest.raises(UsageError) as caught:
        Settings().set("max_token", 3)
    assert caught.value.hint == "did you mean 'max-tokens'?"
    with pytest.raises(UsageError) as caught:
        Settings.resolve({}, env={}, config_path=Path("/nonexistent")).set("zzqq", 1)
    assert caught.value.hint.startswith("known settings: index, model,")


def test_an_empty_server_flag_clears_a_server_set_elsewhere():
    """`--base-url ""` cleared a RAGCLI_BASE_URL to use the local model; it became "--backend openai
    needs --base-url"."""
    from pathlib import Path

    s = Settings.resolve({"base_url": "", "api_model": ""}, env={"RAGCLI_BASE_URL": "http://x"},
                         config_path=Path("/nonexistent"))
    assert (s.backend, s.base_url, s.api_model) == ("llama", "", "")


@pytest.mark.parametrize("cli, repl", [
    ("shorten the question or raise --ctx", "shorten the question or raise ctx (/set ctx N)"),
    ("(--keep-first no to drop them)", "(/set keep-first no to drop them)"),
    ("is it running? check --base-url", "is it running? check base-url (/set base-url URL)"),
    ("e.g. --base-url http://127.0.0.1:8080 for it", "e.g. /set base-url http://127.0.0.1:8080 for it"),
    ("use --strategy single|crag|ircot|..., or a server", "use /set strategy single|crag|ircot|..., or a server"),
    ("web search is off (--no-web); none", "web search is off (/set web no); none"),
    ("a context of 9999 tokens (--ctx) is more", "a context of 9999 tokens (/set ctx N) is more"),
    ("--upper (0.2) is below --lower (0.6)", "upper (0.2) is below lower (0.6)"),
    ("--prompt-style chat: no template", "/set prompt-style chat: no template"),
    ("give --model the .gguf file in it", "give model (/set model PATH) the .gguf file in it"),
    ("pass --model PATH.gguf for a local file", "/set model PATH.gguf for a local file"),
    ("pip install x, or pass --model PATH.gguf", "pip install x, or /set model PATH.gguf"),
    ("leave /set model out, or pass --backend llama", "leave /set model out, or /set backend llama"),
    ("pass one of them with --api-model, or leave --api-model empty",
     "pass one of them with api-model (/set api-model NAME), or leave api-model empty"),
    ("above --upper is correct: --upper must be at least --lower",
     "above upper (/set upper N) is correct: upper must be at least lower (/set lower N)"),
    ("--json prints every event, -q the answer alone", "--json prints every event, -q the answer alone"),
    ("ragcli index --rebuild --index /x PATH", "ragcli index --rebuild --index /x PATH"),
])
def test_a_hint_worded_for_the_command_line_names_set_commands_in_the_repl(cli, repl):
    from ragcli.set_commands import as_set_commands

    assert as_set_commands(cli) == repl


# ---------------------------------------------------------------------------- the model's threads (ragcli.cpus)
def _proc(tmp_path, monkeypatch, cpus=(0, 1)):
    """Fake /proc/stat and /proc/self/stat the test moves forward with ``tick(others, ours, seconds)``."""
    from ragcli import cpus as cpus_mod

    stat, own, clock = tmp_path / "stat", tmp_path / "self_stat", {"t": 100.0, "busy": 0, "ours": 0, "nice": 0}

    def write():
        lines = ["cpu  1 2 3 4 5 6 7 8 0 0"]
        for c in range(4):  # the machine has four CPUs; this process may use ``cpus`` (the busy time all on the first)
            busy = (clock["busy"] if c == cpus[0] else 0) if c in cpus else 999 * clock["t"]
            lines.append(f"cpu{c} {busy} {clock['nice']} 0 5000 0 0 0 0 0 0")
        stat.write_text("\n".join(lines) + "\nintr 1 2 3\n")
        own.write_text(f"42 (rag cli (x)) R 1 1 1 0 -1 0 0 0 0 0 {clock['ours']} 0 0 0 20 0 3 0")

    def tick(others, ours, seconds, nice=0.0):
        ticks = os.sysconf("SC_CLK_TCK")
        clock["t"] += seconds
        clock["ours"] += round(ours * seconds * ticks)
        clock["busy"] += round((others + ours) * seconds * ticks)
        clock["nice"] += round(nice * seconds * ticks)
        write()

    write()
    monkeypatch.setattr(cpus_mod, "PROC_STAT", stat)
    monkeypatch.setattr(cpus_mod, "SELF_STAT", own)
    monkeypatch.setattr(cpus_mod, "our_cpus", lambda: set(cpus))
    monkeypatch.setattr(cpus_mod.time, "monotonic", lambda: clock["t"])
    return tick


def test_the_models_threads_leave_out_the_cores_other_programs_keep_busy(tmp_path, monkeypatch):
    """Two model threads on two cores, one of them busy with another program, took 94 s for a question
    one thread answered in 6 s: without --threads the model uses the cores left free, looked at again
    before each call."""
    from ragcli import cpus

    tick = _proc(tmp_path, monkeypatch)
    waited = []
    monkeypatch.setattr(cpus.time, "sleep", lambda s: (waited.append(s), tick(others=1.0, ours=0.0, seconds=s)))
    free = cpus.FreeCpus()
    tick(others=1.0, ours=1.0, seconds=0.01)  # a model loaded at once: the first look waits a moment more
    assert free.look() == pytest.approx(1.0, abs=0.5) and waited == [pytest.approx(0.04)]
    tick(others=0.0, ours=1.0, seconds=0.5)  # ours alone
    assert free.look() == pytest.approx(2.0) and cpus.model_threads(2, free.look()) == 2
    tick(others=1.0, ours=1.0, seconds=2.0)  # another program took a core
    assert free.look() == pytest.approx(1.0) and cpus.model_threads(2, 1.0) == 1
    tick(others=0.5, ours=1.0, seconds=0.1)  # too soon to tell: the last answer stands
    assert free.look() == pytest.approx(1.0)
    tick(others=0.3, ours=1.5, seconds=2.0)  # a third of a core: that core is not free
    assert cpus.model_threads(2, free.look()) == 1
    tick(others=0.1, ours=2.0, seconds=2.0)  # it ended
    assert cpus.model_threads(2, free.look()) == 2
    tick(others=0.0, ours=1.0, seconds=2.0, nice=1.0)  # a program at a lower priority gives way: not counted
    assert cpus.model_threads(2, free.look()) == 2
    tick(others=2.0, ours=0.0, seconds=2.0)  # every core busy: one thread still
    assert cpus.model_threads(2, free.look()) == 1
    tick(others=0.0, ours=0.0, seconds=600.0)  # a REPL left idle ten minutes; a program starts as the question comes
    tick(others=1.0, ours=0.0, seconds=0.5)
    waited.clear()
    assert cpus.model_threads(2, free.look()) == 1 and waited == [pytest.approx(0.05)]  # looked at afresh
    assert cpus.model_threads(3, None) == 3  # not Linux: the cores, as before


def _cgroups(tmp_path, monkeypatch, groups: str, mounts: list[tuple[str, str, str, str]], files: dict[str, str]):
    """Fake /proc/self/cgroup, /proc/self/mountinfo ((root, mount point under tmp_path, type, options)) and
    the cgroup files under tmp_path."""
    from ragcli import cpus

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "cgroup").write_text(groups)
    (tmp_path / "mountinfo").write_text("".join(
        f"3{i} 23 0:2{i} {root} {tmp_path / point} rw,nosuid shared:{i} - {kind} cgroup {options}\n"
        for i, (root, point, kind, options) in enumerate(mounts)) + "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
    monkeypatch.setattr(cpus, "CGROUP", tmp_path / "cgroup")
    monkeypatch.setattr(cpus, "MOUNTINFO", tmp_path / "mountinfo")


def test_the_models_threads_are_no_more_than_a_containers_cpu_quota(tmp_path, monkeypatch):
    """In a container limited to 2 CPUs (`docker run --cpus 2`) on a 16-core host, the model ran 16 threads:
    each step waits for the slowest, and the quota stops them all for the rest of each 100 ms period once it
    is spent (as a busy core did: 94 s a question for 6). The quota of the process's cgroup, or of one above
    it, cgroup v2 or v1, caps the threads (and `index --jobs 0`), rounded down, one at least."""
    from ragcli import cpus

    monkeypatch.setattr(cpus, "physical_cores", lambda cpus=None: 16)
    monkeypatch.setattr(cpus, "our_cpus", lambda: set(range(16)))
    # cgroup v2 (systemd, podman, docker with cgroupns): the tightest quota on the way up counts
    _cgroups(tmp_path / "v2", monkeypatch, "0::/user.slice/app.scope\n", [("/", "cg", "cgroup2", "rw,nsdelegate")],
             {"cg/user.slice/app.scope/cpu.max": "max 100000\n", "cg/user.slice/cpu.max": "150000 100000\n",
              "cg/cpu.max": "400000 100000\n"})
    assert cpus.cpu_quota() == 1.5 and cpus.model_cores() == 1 and cpus.available_cpus() == 1
    # cgroup v1 (docker on an older host): the container's cgroup is the mount's root
    _cgroups(tmp_path / "v1", monkeypatch, "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n",
             [("/docker/abc", "cpu,cpuacct", "cgroup", "rw,cpu,cpuacct"), ("/docker/abc", "memory", "cgroup", "rw,memory")],
             {"cpu,cpuacct/cpu.cfs_quota_us": "200000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
              "memory/cpu.cfs_quota_us": "50000\n"})  # (not the cpu controller's: no quota)
    assert cpus.cpu_quota() == 2.0 and cpus.model_cores() == 2 and cpus.available_cpus() == 2
    # no quota set (-1, "max"), a quota above the cores, files that cannot be read: the cores, as before
    _cgroups(tmp_path / "none", monkeypatch, "1:cpu:/\n0::/\n",
             [("/", "cpu", "cgroup", "rw,cpu"), ("/", "unified", "cgroup2", "rw")],
             {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n", "unified/cpu.max": "max 100000\n"})
    assert cpus.cpu_quota() is None and cpus.model_cores() == 16
    _cgroups(tmp_path / "big", monkeypatch, "0::/\n", [("/", "cg", "cgroup2", "rw")], {"cg/cpu.max": "6400000 100000"})
    assert cpus.cpu_quota() == 64.0 and cpus.model_cores() == 16
    _cgroups(tmp_path / "odd", monkeypatch, "garbage\n0::/\n", [("/", "cg", "cgroup2", "rw")], {"cg/cpu.max": "lots"})
    assert cpus.cpu_quota() is None and cpus.model_cores() == 16
    monkeypatch.setattr(cpus, "CGROUP", tmp_path / "missing")
    assert cpus.cpu_quota() is None and cpus.available_cpus() == 16


def test_this_machines_cpu_quota_reads_without_error():
    """Whatever this machine's cgroups hold (none, v1, v2, a quota or not): a number of CPUs or None."""
    from ragcli import cpus

    quota = cpus.cpu_quota()
    assert quota is None or quota > 0
    assert 1 <= cpus.model_cores() <= cpus.physical_cores()


def test_the_models_threads_are_the_physical_cores_and_unknown_load_changes_nothing(tmp_path, monkeypatch):
    from ragcli import cpus

    topology = tmp_path / "cpu"
    for cpu, siblings in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}.items():  # two cores, two hyperthreads each
        (topology / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (topology / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(siblings + "\n")
    monkeypatch.setattr(cpus, "TOPOLOGY", topology)
    assert cpus.physical_cores({0, 1, 2, 3}) == 2 and cpus.physical_cores({0, 2}) == 1
    assert cpus.physical_cores({0, 7}) == 2  # no topology for CPU 7: the CPUs, counted
    monkeypatch.setattr(cpus, "PROC_STAT", tmp_path / "missing")
    assert cpus.FreeCpus().look() is None
    (tmp_path / "odd").write_text("cpuX 1 2\ncpu0 a b c d e f g h\n")
    monkeypatch.setattr(cpus, "PROC_STAT", tmp_path / "odd")
    assert cpus.FreeCpus().look() is None and cpus.model_threads(4, None) == 4
