// msgpackr loads its optional native accelerator inside try/catch and falls back to JavaScript.
throw new Error('msgpackr-extract native acceleration is not installed in this project');
