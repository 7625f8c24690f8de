/// Background processes of one agent (placeholder until the terminal tools land).
#[derive(Debug, Default)]
pub struct ProcessTable {}
