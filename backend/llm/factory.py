"""Builds the configured LLM provider from Settings."""

from __future__ import annotations

from backend.config import Settings
from backend.llm.base import LLM


def build_llm(settings: Settings) -> LLM:
    # Each provider is imported only when chosen: the embedded one loads a native library, and a server-backed
    # deployment need not have it installed.
    if settings.llm_provider == "ollama":
        from backend.llm.ollama import OllamaLLM

        return OllamaLLM(
            settings.ollama_model,
            settings.ollama_base_url,
            num_ctx=settings.ollama_num_ctx,
            timeout=settings.llm_first_token_timeout,
        )
    if settings.llm_provider == "openai":
        from backend.llm.openai_compat import OpenAICompatLLM

        return OpenAICompatLLM(
            settings.openai_base_url,
            settings.openai_model,
            api_key=settings.openai_api_key,
            context_window=settings.llm_n_ctx,
            timeout=settings.llm_first_token_timeout,
        )
    from backend.llm.llamacpp import LlamaCppLLM, available_cores, bundled_model_path

    instances = settings.llm_slots
    return LlamaCppLLM(
        settings.llm_model_path or bundled_model_path(),
        n_ctx=settings.llm_n_ctx,
        n_threads=settings.llm_threads or max(1, available_cores() // instances),
        instances=instances,
        stall_timeout=settings.llm_stall_timeout,
        batch_tokens=settings.llm_batch_tokens,
        repeat_penalty=settings.llm_repeat_penalty,
    )
