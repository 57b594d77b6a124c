-- Usage taken by rules since corrected (docs/agents.md): Copilot CLI's input
-- counted its cached tokens twice, and Gemini CLI's and Qwen Code's output
-- left out the thinking Gemini's API counts apart. Those agents' files are
-- read again, once, by the next import or capture, to set their usage right.
DELETE FROM import_files WHERE agent_kind IN ('copilot-cli', 'gemini-cli', 'qwen-code');
