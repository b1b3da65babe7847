from ragcli import prompts
from ragcli.generation.chat import use_chat, wrap

GEMMA_LIKE = ("{% for m in messages %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
              "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def test_chat_wrap_puts_the_answer_so_far_after_the_assistant_header():
    prompt = prompts.answer_prompt("Who wrote Hamlet?", answer_so_far="William Shakespeare.")
    wrapped = wrap(prompt, GEMMA_LIKE)
    assert wrapped.startswith("<start_of_turn>user\nAnswer each question")
    assert "Question: Who wrote Hamlet?<end_of_turn>\n<start_of_turn>model\n" in wrapped
    assert wrapped.endswith("<start_of_turn>model\nWilliam Shakespeare.")


def test_auto_style_uses_chat_only_for_instruct_models_with_a_template():
    assert use_chat("auto", GEMMA_LIKE, "gemma-3-1b-it-Q4_K_M.gguf")
    assert use_chat("auto", GEMMA_LIKE, "Qwen2.5-1.5B-Instruct")
    assert not use_chat("auto", GEMMA_LIKE, "gemma-3-270m-q4_k_m.gguf")
    assert not use_chat("auto", None, "x-instruct")
    assert use_chat("chat", GEMMA_LIKE, "anything") and not use_chat("completion", GEMMA_LIKE, "x-it")
