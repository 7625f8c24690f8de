mod provider_answers;
