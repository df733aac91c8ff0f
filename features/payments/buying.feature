Feature: Buying coins with Telegram Stars through the bot
  The user picks a coin package and pays its invoice in Telegram Stars. Just before Telegram
  charges, we confirm the package is still sold at that price; only a settled payment
  credits coins, once per charge, whatever order the notifications come in.
  The coin packages: 50 Stars buy 100 coins, 100 Stars buy 220, 250 Stars buy 600.

  Scenario: A bought package is credited and the user is told
    Given the user has started the bot
    When the user asks to buy the package of 100 Stars
    Then the user gets an invoice of 100 Stars for 220 coins
    When Telegram asks whether that invoice may still be paid
    Then the payment is allowed
    When Telegram tells us the user paid that invoice with charge "ch-1"
    Then the user is told 220 coins were added
    And the user has 270 coins available

  Scenario: An invoice for a package that is no longer sold is declined before the user pays
    Given the user has started the bot
    And the user asked to buy the package of 100 Stars
    When the coin packages change to: 100 Stars buy 250 coins
    And Telegram asks whether that invoice may still be paid
    Then the payment is declined because the offer has changed

  Scenario: A payment notified twice credits once and says so once
    Given the user has started the bot
    And the user asked to buy the package of 50 Stars
    When Telegram tells us the user paid that invoice with charge "ch-1"
    And Telegram tells us the user paid that invoice with charge "ch-1"
    Then the user is told once that 100 coins were added
    And the user has 150 coins available

  Scenario: A notification that arrives after reconciliation credited the payment changes nothing
    Given the user has started the bot
    And the user asked to buy the package of 250 Stars
    And the user paid that invoice with charge "ch-9", but Telegram's notification was lost
    When the payments are reconciled
    Then charge "ch-9" is credited
    And the user is told once that 600 coins were added
    When Telegram tells us the user paid that invoice with charge "ch-9"
    Then the user is told once that 600 coins were added
    And the user has 650 coins available

  Scenario: A package bought before the price list changed is credited as offered
    Given the user has started the bot
    And the user asked to buy the package of 100 Stars
    And the coin packages change to: 100 Stars buy 250 coins
    When Telegram tells us the user paid that invoice with charge "ch-3"
    Then the user is told 220 coins were added

  Scenario: Many users paying at the same moment are each credited, and Telegram is asked a few times, not once each
    Given 20 users have each asked to buy the package of 50 Stars
    When Telegram tells us at the same moment that each of them paid that invoice
    Then each of them is told 100 coins were added
    And Telegram's list of payments was read at most 6 times

  Scenario: Other users are answered while Telegram is slow to confirm payments
    Given 20 users have each asked to buy the package of 50 Stars
    And Telegram takes a second to answer each read of its list of payments
    When Telegram tells us at the same moment that each of them paid that invoice, and then a new user sends /start
    Then the new user is answered before any of them is told coins were added
    And each of them is told 100 coins were added
