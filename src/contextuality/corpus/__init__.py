"""The corpus stage: the sentence table and its sources (`sentences`), the word tokenizer
(`words`), the occurrence index and its files (`index`)."""
