"""Every prompt the pipeline sends to an LLM, in one place. Fixed replies that need no LLM are here too."""

from __future__ import annotations

SYSTEM_PROMPT = (
    "You are Axiom, an assistant that answers questions using only the user's documents. "
    "If the documents do not contain the answer, say so plainly."
)

# The retry prompt repeats the first prompt up to the end of the sources, so a regeneration reuses the model's
# cache of that prefix (llama.cpp keeps the longest common prefix) and reads only the feedback and the question.
_GENERATION_HEAD = """Answer the question using ONLY the sources below.
After every sentence, cite the source it comes from as [Source N]. Do not use outside knowledge.
If the sources do not contain the answer, reply exactly: "The documents do not contain this information."

Sources:
{context}

"""

GENERATION_PROMPT = _GENERATION_HEAD + """Question: {question}
Answer:"""

GENERATION_WITH_RETRY_PROMPT = _GENERATION_HEAD + """Your previous answer contained claims the sources do not support:
{feedback}
Answer again using ONLY facts stated in the sources above, copying their wording where you can. Leave out anything
the sources do not say.

Question: {question}
Answer:"""

QUERY_REWRITE_PROMPT = """Rewrite the user's last question as one standalone search query for their documents.
Resolve words like "it" or "that" using the conversation. Reply with the query only.

Conversation:
{history}

Last question: {question}
Search query:"""

TRANSFORM_PROMPTS = {
    "followup": "Expand the previous answer with more detail, using only the sources it was based on.",
    "simplify": "Rewrite the previous answer so a 10-year-old understands it. Keep it short and correct.",
    "deepen": "Rewrite the previous answer with more technical depth and precision, staying faithful to it.",
}

TRANSFORM_PROMPT = """{instruction}

Previous question: {question}
Previous answer: {answer}

Sources of the previous answer:
{context}

New answer:"""

MAP_SUMMARY_PROMPT = """Summarise the key points of this part of the user's documents in a few sentences.

{context}

Summary:"""

FIXED_REPLIES = {
    "greeting": "Hello! How can I help you with your documents today?",
    "gratitude": "You're welcome! Feel free to ask if you have more questions about your documents.",
    "garbage": "I didn't quite understand that. Could you rephrase your question about the documents?",
    "off_topic": (
        "I'm designed to help with questions about your uploaded documents. "
        "What would you like to know about them?"
    ),
    "clarify_needed": (
        "Could you say a little more about what you're looking for? "
        "For example, name the topic, section or document you mean."
    ),
}

NOT_FOUND_REPLY = (
    "I couldn't find this in your documents. Try rephrasing the question, or upload a document that covers it."
)
# The passages are about the question's topic but none answers it: they may be shown, never as an answer.
NOT_ANSWERED_REPLY = "Your documents touch on this, but I couldn't find the answer in them."
CLOSEST_PASSAGES_PREFIX = "The closest passages, which do not answer the question:"
NO_DOCUMENTS_REPLY = (
    "This chat has no documents yet. Upload a file (PDF, Word, PowerPoint, Excel, CSV, text, Markdown, HTML, EPUB "
    "or an image) and ask me about it."
)
# "Tell me more" about an answer whose documents were deleted since ({was}: "was" or "were").
PREVIOUS_SOURCES_REMOVED_REPLY = (
    "That answer came from {files}, which {was} removed from this chat since, so I will not build on it. Ask "
    "your question again to search the documents still here."
)
# An answer whose documents were deleted while it was written.
SOURCES_REMOVED_MID_ANSWER_REPLY = (
    "{files}, which this answer was drawn from, {was} removed from this chat while it was being written, so the "
    "answer was not kept. Ask again to search the documents still here."
)
EXTRACTIVE_PREFIX = "I could not write an answer I can fully back up, so here is what your documents say:"
MODEL_BUSY_REPLY = (
    "Many questions are waiting for the model right now, so I cannot rework that answer. Ask again in a minute."
)
BUSY_EVIDENCE_PREFIX = "Many questions are waiting for the model right now, so here is what your documents say:"
