"""The bot's side of core: events from the inbox, the conversation, and the screens."""
