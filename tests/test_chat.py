"""Chat templates: prompts become real conversations (exemplars as earlier turns)."""

from ragcli import prompts
from ragcli.generation.chat import end_of_turn, messages, render, use_chat
from ragcli.types import Document
from tests.exemplars import copied_run, exemplar_runs

GEMMA_LIKE = ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
              "{% endif %}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
              "{{ m['content'] }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
          "You are a helpful AI assistant<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
          "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
          "{% endif %}")
DOC = Document("p1", "Hamlet", "Hamlet is a tragedy by William Shakespeare.")


def test_documents_join_the_instruction_exemplars_are_earlier_turns_and_the_request_is_the_last_user_turn():
    prompt = prompts.answer_prompt("Who wrote Hamlet?", [DOC], "William Shakespeare.")
    msgs = messages(prompt)
    assert msgs[0] == {"role": "system", "content": prompts.INSTRUCTION.strip() + "\n\nDocuments:\n"
                       "[1] Hamlet: Hamlet is a tragedy by William Shakespeare."}
    assert [m["role"] for m in msgs[1:]] == ["user", "assistant", "user", "assistant", "user"]
    assert msgs[1]["content"] == "Question: In which country is the Eiffel Tower?"
    assert msgs[2]["content"].startswith("France. The Eiffel Tower")  # no "Answer:" label in a turn
    assert msgs[-1]["content"] == "Question: Who wrote Hamlet?"
    rendered = render(prompt, CHATML)
    assert rendered.startswith("<|im_start|>system\nAnswer each question with a short phrase")
    assert rendered.endswith("Question: Who wrote Hamlet?<|im_end|>\n<|im_start|>assistant\nWilliam Shakespeare.")
    assert "Eiffel" not in rendered.rsplit("<|im_start|>user", 1)[1]  # the task turn holds no exemplar
    # without documents there is nothing to add to the instruction
    assert messages(prompts.answer_prompt("Who wrote Hamlet?"))[0]["content"] == prompts.INSTRUCTION.strip()


def test_templates_without_a_system_role_get_the_instruction_in_the_first_user_turn():
    rendered = render(prompts.answer_prompt("Who wrote Hamlet?", [DOC]), GEMMA_LIKE)
    assert rendered.startswith("<start_of_turn>user\nAnswer each question with a short phrase, then one sentence "
                               "of explanation.\n\nDocuments:\n[1] Hamlet: Hamlet is a tragedy by William "
                               "Shakespeare.\n\nQuestion: In which country is the Eiffel Tower?<end_of_turn>")
    assert rendered.endswith("<start_of_turn>user\nQuestion: Who wrote Hamlet?<end_of_turn>\n<start_of_turn>model\n")


def test_exemplars_can_be_left_out_and_formats_that_start_with_their_cue_keep_it():
    rendered = render(prompts.answer_prompt("Who wrote Hamlet?"), CHATML, exemplars=False)
    assert "Eiffel" not in rendered and rendered.count("<|im_start|>user") == 1
    self_ask = render(prompts.self_ask_prompt("Who was older?", scratchpad="Follow up: How old"), CHATML)
    assert self_ask.endswith("<|im_start|>assistant\nAre follow up questions needed here: Yes.\nFollow up: How old")
    assert "<|im_start|>assistant\nAre follow up questions needed here: Yes.\nFollow up: How old was Muhammad" in self_ask


def test_the_completion_text_of_a_prompt_is_unchanged():
    prompt = prompts.answer_prompt("Who wrote Hamlet?", [DOC], "William")
    assert prompt == (prompts.INSTRUCTION + prompts.EXEMPLARS + "Documents:\n[1] Hamlet: Hamlet is a tragedy by "
                      "William Shakespeare.\n\nQuestion: Who wrote Hamlet?\nAnswer: William")
    assert render("plain text", CHATML).endswith("<|im_start|>user\nplain text<|im_end|>\n<|im_start|>assistant\n")


def test_an_extended_prompt_keeps_every_part_and_adds_to_the_answer_so_far():
    import inspect

    names = [n for n in inspect.signature(prompts.Prompt.__new__).parameters if n != "cls"]
    assert sorted(names) == sorted(prompts.Prompt.PARTS)  # a new part must be carried by extended() too
    prompt = prompts.self_ask_prompt("Who was older?", [DOC], scratchpad="Follow up:")
    longer = prompt.extended(" How old")
    assert longer == prompt + " How old"
    assert all(getattr(longer, n) == getattr(prompt, n) for n in names if n != "continuation")
    assert longer.continuation == prompt.continuation + " How old"
    assert render(longer, CHATML) == render(prompt, CHATML) + " How old"


def test_the_end_of_turn_marker_is_what_the_template_writes_after_an_assistant_message():
    assert end_of_turn(CHATML) == "<|im_end|>"
    assert end_of_turn(GEMMA_LIKE) == "<end_of_turn>"
    llama2 = ("{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token + '[INST] ' + m['content'] + ' [/INST]' }}"
              "{% else %}{{ ' ' + m['content'] + ' ' + eos_token }}{% endif %}{% endfor %}")
    assert end_of_turn(llama2, eos="</s>") == "</s>"
    assert end_of_turn("{{ raise_exception('no') }}") == ""


def test_templates_that_write_the_models_bos_and_eos_get_them_between_turns():
    """Zephyr, Mistral and Llama 2 close (or open) every turn with EOS (BOS): rendered with "" for them,
    the exemplar turns ran into each other. The first BOS is left to the tokenizer."""
    from ragcli import prompts

    llama2 = ("{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token + '[INST] ' + m['content'] + ' [/INST]' }}"
              "{% elif m['role'] == 'assistant' %}{{ ' ' + m['content'] + ' ' + eos_token }}{% endif %}{% endfor %}")
    zephyr = ("{% for m in messages %}{{ '<|' + m['role'] + '|>\n' + m['content'] + eos_token + '\n' }}{% endfor %}"
              "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}")
    prompt = prompts.answer_prompt("Who wrote Hamlet?", [DOC])
    text = render(prompt, llama2, eos="</s>", bos="<s>")
    assert text.startswith("[INST] ") and text.count("</s><s>[INST] ") == len(prompt.exemplars)
    text = render(prompt, zephyr, eos="</s>", bos="<s>")
    assert text.count("</s>\n<|user|>") == len(prompt.exemplars) + 1  # and the system turn's
    assert text.endswith("<|assistant|>\n")
    assert render(prompt, CHATML, eos="</s>", bos="<s>") == render(prompt, CHATML)  # ChatML writes neither


def test_a_bos_text_the_template_opens_with_stays_where_the_tokenizer_adds_no_bos():
    """SmolLM2's BOS is "<|im_start|>" and its tokenizer adds none: stripped as a BOS the tokenizer would
    add, the prompt began "system\n" with no turn opened."""
    prompt = prompts.answer_prompt("Who wrote Hamlet?", [DOC])
    assert render(prompt, CHATML, bos="<|im_start|>").startswith("system\n")  # the tokenizer adds it back
    assert render(prompt, CHATML, bos="<|im_start|>", bos_added=False) == render(prompt, CHATML)
    assert render("Hi", GEMMA_LIKE, bos="<bos>", bos_added=False).startswith("<bos><start_of_turn>user\nHi")


def test_templates_of_hugging_face_models_render_generation_blocks_loop_controls_and_dates():
    """Templates trained for assistant-only loss wrap the reply in {% generation %}; others call
    strftime_now or {% break %}: llama.cpp and transformers render them, ragcli crashed (exit 1)."""
    from ragcli.generation.chat import template_problem

    tmpl = ("{{ 'Today: ' + strftime_now('%Y') + '\n' }}{% for m in messages %}{% if loop.index > 9 %}{% break %}"
            "{% endif %}{% if m['role'] == 'assistant' %}{% generation %}<|a|>{{ m['content'] }}{% endgeneration %}"
            "{% else %}<|{{ m['role'] }}|>{{ m['content'] }}{% endif %}<|end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|a|>{% endif %}")
    assert template_problem(tmpl) is None
    text = render("Hi", tmpl)
    assert text.startswith("Today: 20") and text.endswith("<|user|>Hi<|end|>\n<|a|>")
    assert end_of_turn(tmpl) == "<|end|>"
    assert template_problem(CHATML) is None and template_problem(GEMMA_LIKE) is None
    assert template_problem("{% nosuchtag %}").startswith("TemplateSyntaxError")
    assert template_problem("{{ undefined_function() }}").startswith("UndefinedError")
    assert template_problem("{{ raise_exception('only user and assistant') }}").startswith("ValueError")


def test_auto_style_uses_chat_only_for_instruct_models_with_a_template():
    assert use_chat("auto", GEMMA_LIKE, "gemma-3-1b-it-Q4_K_M.gguf")
    assert use_chat("auto", GEMMA_LIKE, "Qwen2.5-1.5B-Instruct")
    assert not use_chat("auto", GEMMA_LIKE, "gemma-3-270m-q4_k_m.gguf")
    assert not use_chat("auto", None, "x-instruct")
    assert use_chat("chat", GEMMA_LIKE, "anything") and not use_chat("completion", GEMMA_LIKE, "x-it")
    # a renamed file: the GGUF's name and finetune fields, joined by spaces, say it
    assert use_chat("auto", GEMMA_LIKE, "model.gguf Gemma 3 1b It")
    assert use_chat("auto", GEMMA_LIKE, "gemma-3-1b-Q4_K_M.gguf Gemma 3 1b it")
    assert not use_chat("auto", GEMMA_LIKE, "gemma-3-270m-q4_k_m.gguf Gemma 3 270m ")
    assert not use_chat("auto", GEMMA_LIKE, "itinerary-7b.gguf Edit Model ")


def test_a_defused_prompt_changes_what_the_messages_say_not_the_templates_markers():
    from ragcli import prompts
    from ragcli.types import Document

    page = Document("1", "Chat", "<|im_end|> inside a page")
    text = render(prompts.answer_prompt("Q <|im_end|>?", [page]), CHATML,
                  defuse=lambda t: t.replace("<|im_end|>", "<END>"))
    assert "<END> inside a page" in text and "Q <END>?" in text
    assert text.count("<|im_end|>") == text.count("<|im_start|>") - 1  # every turn but the open one closed


def test_the_exemplar_collector_finds_every_prompts_exemplars():
    runs = exemplar_runs()
    for text in ("The Eiffel Tower stands in Paris, the capital of France.",
                 "Alan Turing was born on 23 June 1912. John von Neumann was born on 28 December 1903.",
                 "Intermediate answer: Muhammad Ali was 74 years old when he died.",
                 "He was also an actor and a part-owner of the Globe Theatre in London.",
                 "Mount Everest is Earth's highest mountain above sea level, in the Himalayas."):
        assert copied_run(text, runs), text
    assert copied_run("Ulf Merbold was the first West German citizen to fly in space in 1983.", runs) is None


def test_a_follow_ups_thread_is_the_earlier_turns_and_the_question_the_last():
    """A REPL follow-up carried its thread in brackets after the question: SmolLM2 took "he" for the
    exemplar turns' subject ("Where was he born?" → "William Shakespeare was born in Shoreditch")."""
    thread = [("Who was Christer Fuglesang?", "A Swedish astronaut."), ("What did he study?", ""),
              ("Where did he work?", "At CERN (in Geneva).")]
    text = prompts.follow_up_request("Where was he born?", thread)
    assert text.startswith("Where was he born? (Earlier question: Who was Christer Fuglesang?")
    assert prompts.split_follow_up(text) == ("Where was he born?", thread)
    assert prompts.split_follow_up("Is it (as said) true?") == ("Is it (as said) true?", [])
    msgs = messages(prompts.answer_prompt(text, [DOC]))
    turns = [(m["role"], m["content"]) for m in msgs[5:]]  # after the system turn and two exemplar exchanges
    assert turns == [("user", "Question: Who was Christer Fuglesang?"), ("assistant", "A Swedish astronaut."),
                     ("user", "Question: What did he study? Question: Where did he work?"),  # one was cancelled
                     ("assistant", "At CERN (in Geneva)."), ("user", "Question: Where was he born?")]
    alone = prompts.follow_up_request("When was he born?", [("Who was Christer Fuglesang?", "")])
    assert messages(prompts.answer_prompt(alone))[-1]["content"] == (
        "Question: Who was Christer Fuglesang? Question: When was he born?")  # not the exemplars' "he"
    assert render(prompts.answer_prompt(text), GEMMA_LIKE).endswith(
        "<start_of_turn>user\nQuestion: Where was he born?<end_of_turn>\n<start_of_turn>model\n")
    # a completion prompt is as it was: the question, then its thread in brackets
    assert str(prompts.answer_prompt(text)).endswith(f"Question: {text}\nAnswer:")
